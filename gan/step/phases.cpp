#include "gan/step/phases.h"

#include <algorithm>

namespace gantry::gan {

bool Phase::updates_generator() const {
  return std::find(networks.begin(), networks.end(), Network::Generator) != networks.end();
}

std::vector<Phase> phases_for(const TrainSchedule& s, int micro_batches) {
  std::vector<Phase> phases;
  if (s.joint) {
    Phase joint;
    joint.networks = {Network::Discriminator, Network::Generator};
    joint.micro_batches = micro_batches;
    phases.push_back(joint);
    return phases;
  }
  if (s.discriminator_steps > 0) {
    Phase d;
    d.networks = {Network::Discriminator};
    d.updates = s.discriminator_steps;
    d.batch_per_update = true;
    d.micro_batches = micro_batches;
    phases.push_back(d);
  }
  if (s.generator_steps > 0) {
    // G reads the last D update's batch (its real images serve losses that compare with them)
    Phase g;
    g.networks = {Network::Generator};
    g.updates = s.generator_steps;
    g.first_substep = s.discriminator_steps;
    g.first_batch = std::max(0, s.discriminator_steps - 1);
    g.reuses_previous_fake = s.reuse_fake && s.discriminator_steps > 0;
    g.micro_batches = micro_batches;
    phases.push_back(g);
  }
  return phases;
}

int input_batches(const std::vector<Phase>& phases) {
  int batches = 1;
  for (const Phase& p : phases) batches = std::max(batches, p.batch_of(p.updates - 1) + 1);
  return batches;
}

int updates_of(const std::vector<Phase>& phases, Network network) {
  int n = 0;
  for (const Phase& p : phases)
    if (std::find(p.networks.begin(), p.networks.end(), network) != p.networks.end()) n += p.updates;
  return n;
}

}  // namespace gantry::gan
