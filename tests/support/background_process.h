// A command line running in the background (stdout and stderr into one pipe), for end-to-end
// tests that watch a running app and signal it. The process gets its own process group, which
// the destructor kills (SIGKILL) if it is still running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "support/run_process.h"

namespace gantry::testing {

class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::string& command_line);  // run by /bin/sh
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until `text` appears (true), or the process closes its output or `timeout`
  // passes (false).
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout);
  // Sends `signal` to `target`: this process (pid()) or one of its descendants.
  void send_to(pid_t target, int signal) const;
  // Reads the rest of the output and reaps the process; nullopt if it is still running after
  // `timeout`.
  std::optional<ProcessResult> wait(std::chrono::milliseconds timeout);
  const std::string& output() const { return output_; }

 private:
  // Appends what the pipe holds within `timeout`; false once the pipe is closed.
  bool read_some(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int pipe_ = -1;
  bool reaped_ = false;
  std::string output_;
};

// Polls /proc/PID/status (every millisecond) until `pid` has a handler for `signal` (its SigCgt
// mask): true then, false when `timeout` passes or the process is gone first.
bool wait_until_catching(pid_t pid, int signal, std::chrono::milliseconds timeout);

// The live processes whose parent is `parent` and whose environment holds `variable`=`value`
// (e.g. OMPI_COMM_WORLD_RANK=1 to find one rank under mpirun), read from /proc.
std::vector<pid_t> child_processes_with_env(pid_t parent, const std::string& variable, const std::string& value);

}  // namespace gantry::testing
