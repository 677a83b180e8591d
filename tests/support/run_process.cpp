#include "support/run_process.h"

#include <sys/wait.h>

#include <cstdio>

namespace gantry::testing {

ProcessResult run_process(const std::string& program, const std::string& args) {
  std::string cmd = program + " " + args + " 2>&1";
  ProcessResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, 0, "popen failed: " + cmd};
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe)) r.output += buf;
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r;
}

}  // namespace gantry::testing
