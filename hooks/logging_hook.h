// LoggingHook: every N steps one human-readable line, to a stream (the terminal) and appended
// to the run's log file:
//   step 50 | D 1.3863 (gradient_penalty 0.1021) | G 0.6931 | 1234.5 img/s |
//     ms/step input 0.1 compute 12.3 all-reduce 0.4 update 0.2 total 13.0
// (on one line). Losses are the logged step's; images/s and the time breakdown are averaged
// over the steps since the previous line. begin and end log the step the run starts and
// stops at.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <string>

#include "gan/estimator/hook.h"
#include "hooks/best_effort_output.h"

namespace gantry::hooks {

struct LoggingHookOptions {
  int64_t every_steps = 50;          // >= 1
  std::ostream* out = nullptr;       // terminal stream (nullptr: none)
  std::filesystem::path log_file;    // appended to ("" : none)
  // Start each terminal line with "\r" + clear-to-end-of-line (a progress bar shares the line).
  bool clear_line_first = false;
};

// The line for one step; `averages` carries images/s and times to print (usually the window's).
std::string format_step_line(const gan::StepResults& results, const gan::StepResults& averages);

class LoggingHook : public gan::Hook {
 public:
  explicit LoggingHook(LoggingHookOptions options);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  // Writes a line to both destinations (other hooks and the apps may log through it).
  void log(const std::string& line);

 private:
  LoggingHookOptions options_;
  std::ofstream file_;
  BestEffortOutput file_outputs_;  // the log file's failed writes warn on `out` (Note [output failures])
  gan::StepResults window_;  // sums since the last line
  int64_t window_steps_ = 0;
};

}  // namespace gantry::hooks
