#include "hooks/evaluation_hook.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

namespace gantry::hooks {

EvaluationHook::EvaluationHook(gan::BatchSource input, int64_t every_steps, int64_t steps,
                               std::filesystem::path model_dir, std::ostream* out)
    : input_(std::move(input)), every_steps_(every_steps), steps_(steps),
      file_(std::move(model_dir) / "evaluation.jsonl"), out_(out), outputs_(out) {
  GANTRY_CHECK(every_steps >= 1 && steps >= 1, "EvaluationHook: expected every_steps >= 1 and "
               "steps >= 1, found ", every_steps, " and ", steps);
}

void EvaluationHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (results.step % every_steps_ != 0) return;
  gan::EvalResults e = estimator.evaluate(input_, steps_);
  if (!estimator.strategy().is_chief()) return;
  nlohmann::json line = {{"step", results.step},
                         {"examples", e.examples},
                         {"discriminator_loss", e.discriminator_loss},
                         {"generator_loss", e.generator_loss},
                         {"real_accuracy", e.real_accuracy},
                         {"fake_accuracy", e.fake_accuracy}};
  outputs_.write(file_, [&] {
    std::ofstream f(file_, std::ios::app);
    f << line.dump() << "\n";
    f.flush();
    GANTRY_CHECK(f.good(), file_.string(), ": cannot append: ", std::strerror(errno));
  });
  if (out_)
    *out_ << "eval step " << results.step << " | D " << std::fixed << std::setprecision(4)
          << e.discriminator_loss << " | G " << e.generator_loss << " | D accuracy real "
          << e.real_accuracy << " fake " << e.fake_accuracy << " (" << e.examples << " examples)"
          << std::defaultfloat << std::endl;
}

}  // namespace gantry::hooks
