#include "support/recorded_training.h"

#include "support/tiny_gan.h"

namespace gantry::testing {

namespace {

class Recorder : public gan::Hook {
 public:
  explicit Recorder(RecordedRun& out) : out_(out) {}
  void after_step(gan::GanEstimator&, const gan::StepResults& r) override { out_.steps.push_back(r); }

 private:
  RecordedRun& out_;
};

}  // namespace

RecordedRun train_recorded(const gan::GanSpec& spec, int replicas, int64_t batch, int steps) {
  gan::GanEstimator est(spec, cpu_strategy(replicas), 13);
  RecordedRun out;
  est.train(blobs(batch), steps, {std::make_shared<Recorder>(out)});
  out.state = flat_gan_state(est);
  return out;
}

}  // namespace gantry::testing
