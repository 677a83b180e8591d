#include "gan/spec/train_schedule.h"

#include "base/error.h"

namespace gantry::gan {

void check_schedule(const TrainSchedule& s, const std::string& path) {
  GANTRY_CHECK(s.generator_steps >= 0 && s.discriminator_steps >= 0 && s.generator_steps + s.discriminator_steps > 0,
               path, ": expected non-negative step counts with at least one update, found generator ",
               s.generator_steps, ", discriminator ", s.discriminator_steps);
  GANTRY_CHECK(!s.joint || (s.generator_steps == 1 && s.discriminator_steps == 1), path,
               ".joint: the joint schedule runs one D and one G update per step; found generator ",
               s.generator_steps, ", discriminator ", s.discriminator_steps);
}

}  // namespace gantry::gan
