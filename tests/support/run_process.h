// Runs a command line (stdout and stderr together) and returns its exit code and output, for
// end-to-end tests of the apps.
#pragma once

#include <string>

namespace gantry::testing {

struct ProcessResult {
  int code = 0;  // exit status, -1 when the process did not exit normally
  int signal = 0;  // the signal that ended it, 0 when it exited
  std::string output;
};

ProcessResult run_process(const std::string& program, const std::string& args);

}  // namespace gantry::testing
