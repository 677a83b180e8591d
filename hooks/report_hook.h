// ReportHook: keeps <model_dir>/report.html (hooks/report_page.h) up to date while a run trains:
// rendered at begin, at every summary step and at the end (then without the "training" note and
// the self-reload), each time written atomically (core/file_io.h), so a browser never sees half a
// page. It keeps the run's curves in memory (a RunRecord read once at begin, after MetricsHook
// dropped the lines a resumed run rewrites, then extended by each summary step's results) and
// re-reads only the small files other hooks write: metric-*.jsonl, the sample list, `latest`.
// Runs after the sample and checkpoint hooks' files it shows are written, i.e. last.
#pragma once

#include <cstdint>
#include <filesystem>

#include "gan/estimator/hook.h"
#include "hooks/inline_images.h"
#include "hooks/report_page.h"
#include "hooks/run_record.h"

namespace gantry::hooks {

struct ReportHookOptions {
  std::filesystem::path model_dir;  // required
  int64_t every_steps = 50;         // the summary interval; 0: only at begin and end
  ReportPageOptions page;
};

class ReportHook : public gan::Hook {
 public:
  explicit ReportHook(ReportHookOptions options);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  std::filesystem::path path() const { return options_.model_dir / "report.html"; }

 private:
  void render(bool live);

  ReportHookOptions options_;
  RunRecord record_;
  InlineImages images_;
};

}  // namespace gantry::hooks
