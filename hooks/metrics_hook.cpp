#include "hooks/metrics_hook.h"

#include "core/file_io.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"
#include "nn/safetensors.h"

namespace gantry::hooks {

namespace {

// Keeps the lines of steps <= last_step (a resumed run rewrites what came after its checkpoint).
void purge_after(const std::filesystem::path& path, int64_t last_step) {
  if (!std::filesystem::is_regular_file(path)) return;  // nothing yet (or a device: never read it)
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    // An unparsable line is the half-written last line of a crash.
    if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
        j["step"].get<int64_t>() > last_step) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (dropped)
    write_file_atomic(path.string(), kept);
}

}  // namespace

nlohmann::json step_results_json(const gan::StepResults& r) {
  nlohmann::json j;
  j["step"] = r.step;
  j["discriminator_loss"] = r.discriminator_loss;
  j["generator_loss"] = r.generator_loss;
  j["discriminator_components"] = nlohmann::json::object();
  for (const auto& [k, v] : r.discriminator_components) j["discriminator_components"][k] = v;
  j["generator_components"] = nlohmann::json::object();
  for (const auto& [k, v] : r.generator_components) j["generator_components"][k] = v;
  if (!r.statistics.empty()) j["statistics"] = r.statistics;
  if (r.augment)  // the augmentation probability (docs/augmentation.md)
    j["augment"] = {{"p", r.augment_p}, {"real_sign", r.augment_real_sign}};
  if (r.skipped_updates > 0)
    j["skipped_updates"] = {{"total", r.skipped_updates}, {"loss_scale_overflows", r.loss_scale_overflows}};
  j["global_batch"] = r.global_batch;
  j["images_per_second"] = r.images_per_second;
  j["time"] = {{"input_wait", r.time.input_wait}, {"compute", r.time.compute},
               {"all_reduce", r.time.all_reduce}, {"update", r.time.update},
               {"total", r.time.total}};
  return j;
}

MetricsHook::MetricsHook(std::filesystem::path model_dir, int64_t every_steps, std::ostream* log)
    : path_(std::move(model_dir) / "metrics.jsonl"), every_steps_(every_steps), outputs_(log) {
  GANTRY_CHECK(every_steps_ >= 1, "MetricsHook: every_steps: expected >= 1, found ", every_steps_);
}

void MetricsHook::begin(gan::GanEstimator& estimator) {
  outputs_.write(path_, [&] {
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
    purge_after(path_, estimator.global_step());
    out_.close();
    out_.open(path_, std::ios::app);
    GANTRY_CHECK(out_.good(), path_.string(), ": cannot open for appending: ", std::strerror(errno));
  });
}

void MetricsHook::after_step(gan::GanEstimator&, const gan::StepResults& results) {
  if (results.step % every_steps_ != 0 || !out_.is_open()) return;
  out_ << step_results_json(results).dump() << '\n';
  out_.flush();
  // A half-written line is dropped by purge_after when a run resumes.
  outputs_.report(path_, out_.good(), std::string("write failed: ") + std::strerror(errno));
  out_.clear();
}

void MetricsHook::end(gan::GanEstimator&) { out_.close(); }

}  // namespace gantry::hooks
