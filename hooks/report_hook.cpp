#include "hooks/report_hook.h"

#include "base/error.h"
#include "core/file_io.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/metrics_hook.h"

namespace gantry::hooks {

ReportHook::ReportHook(ReportHookOptions options) : options_(std::move(options)) {
  GANTRY_CHECK(!options_.model_dir.empty(), "ReportHook: expected a model directory, found an empty path");
  GANTRY_CHECK(options_.every_steps >= 0, "ReportHook: every_steps: expected >= 0, found ", options_.every_steps);
}

void ReportHook::begin(gan::GanEstimator& estimator) {
  std::filesystem::create_directories(options_.model_dir);
  record_ = load_run_record(options_.model_dir);
  distribute::Strategy& strategy = estimator.strategy();
  std::string devices;
  for (const Device& d : strategy.local_devices()) {
    if (!devices.empty()) devices += ',';
    devices += d.str();
  }
  options_.page.placement = strategy.name() + " on " + devices + ": " +
                            std::to_string(strategy.num_replicas_in_sync()) + " replica(s) in sync";
  render(true);
}

void ReportHook::after_step(gan::GanEstimator&, const gan::StepResults& results) {
  if (options_.every_steps == 0 || results.step % options_.every_steps != 0) return;
  add_metrics_line(record_, step_results_json(results));
  render(true);
}

void ReportHook::end(gan::GanEstimator&) { render(false); }

void ReportHook::render(bool live) {
  refresh_files(record_);
  ReportPageOptions page = options_.page;
  page.live = live;
  write_file_atomic(path().string(), render_report_page({record_}, page, images_));
}

}  // namespace gantry::hooks
