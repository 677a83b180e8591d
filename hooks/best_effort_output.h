// Writes of the run's secondary outputs, which must not end a run.
//
// Note [output failures]: checkpoints are the run's state, so a failed checkpoint write (a full
// disk, an I/O error) stops the run with its error (exit 1), and `latest` still names the last
// complete checkpoint. Everything else a run writes -- sample grids, metrics.jsonl,
// evaluation.jsonl, train.log -- is best effort: a failed write is reported as a warning naming
// the file and the error (once, until a write to that file succeeds again, which is reported
// too), and training goes on; the next write of that file is tried as usual. Atomic writes
// (write_file_atomic) leave the previous file whole when they fail.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <set>
#include <string>

#include "base/function_ref.h"

namespace gantry::hooks {

class BestEffortOutput {
 public:
  explicit BestEffortOutput(std::ostream* log) : log_(log) {}

  // Runs `write`, which writes `file`, turning a gantry::Error or std::filesystem error into a
  // warning. True when it succeeded.
  bool write(const std::filesystem::path& file, FunctionRef<void()> write);
  // Reports the outcome of a write done elsewhere (e.g. a stream's state after a flush).
  void report(const std::filesystem::path& file, bool ok, const std::string& error);

  std::ostream* log() const { return log_; }

 private:
  std::ostream* log_;
  std::set<std::string> failing_;  // files whose last write failed
};

}  // namespace gantry::hooks
