// ProgressHook: a progress bar redrawn in place when the output is a terminal,
//   [##########..........]  450/1000  45.0%  1234.5 img/s  ETA 0:01:23
// and a plain line of the same content every N steps otherwise (log files, CI).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>

#include "gan/estimator/hook.h"
#include "hooks/metric_file_tail.h"

namespace gantry::hooks {

enum class ProgressMode {
  Auto,   // Bar when stdout is a terminal (isatty), else Lines
  Bar,    // redrawn with '\r', at most every 0.1 s, newline at end
  Lines,  // one line every `every_steps` steps
};

struct ProgressHookOptions {
  int64_t total_steps = 0;  // the run's max_steps (0: unknown; no bar fraction or ETA)
  int64_t every_steps = 50;  // Lines mode interval (>= 1)
  ProgressMode mode = ProgressMode::Auto;
  int bar_width = 30;
  // Where metric hooks write metric-<name>.jsonl (the model dir): the latest value of each is
  // shown. "" : none.
  std::filesystem::path metrics_dir;
};

// True when the process's stdout is a terminal.
bool stdout_is_terminal();

class ProgressHook : public gan::Hook {
 public:
  ProgressHook(std::ostream& out, ProgressHookOptions options);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  bool bar() const { return bar_; }
  // The text of the bar or line for a step's results (no '\r' or newline): progress, losses,
  // images/s, ETA and the latest metric values.
  std::string render(const gan::StepResults& results);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  ProgressHookOptions options_;
  bool bar_;
  int64_t first_step_ = 0;
  Clock::time_point start_, last_draw_;
  bool drawn_ = false;
  std::optional<MetricFileTail> metric_files_;
  std::map<std::string, MetricValue> latest_metrics_;  // by metric name
};

}  // namespace gantry::hooks
