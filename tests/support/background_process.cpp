#include "support/background_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gantry::testing {

using Clock = std::chrono::steady_clock;

BackgroundProcess::BackgroundProcess(const std::string& command_line) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("BackgroundProcess: pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("BackgroundProcess: fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const std::string exec = "exec " + command_line;  // the pid is the program's, not a shell's
    ::execl("/bin/sh", "sh", "-c", exec.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  pipe_ = fds[0];
}

BackgroundProcess::~BackgroundProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (pipe_ >= 0) ::close(pipe_);
}

bool BackgroundProcess::read_some(std::chrono::milliseconds timeout) {
  if (pipe_ < 0) return false;
  pollfd p{pipe_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return true;
  char buf[4096];
  ssize_t n = ::read(pipe_, buf, sizeof buf);
  if (n <= 0) {
    ::close(pipe_);
    pipe_ = -1;
    return false;
  }
  output_.append(buf, static_cast<size_t>(n));
  return true;
}

bool BackgroundProcess::wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (output_.find(text) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !read_some(std::min(left, std::chrono::milliseconds(100)))) return false;
  }
  return true;
}

void BackgroundProcess::send_to(pid_t target, int signal) const { ::kill(target, signal); }

std::optional<ProcessResult> BackgroundProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (read_some(std::chrono::milliseconds(100)))
    if (Clock::now() > deadline) return std::nullopt;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reaped_ = true;
  ProcessResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.output = output_;
  return r;
}

bool wait_until_catching(pid_t pid, int signal, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  while (Clock::now() < deadline) {
    std::ifstream status(path);
    if (!status) return false;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("SigCgt:", 0) == 0 && (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1) & 1)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::vector<pid_t> child_processes_with_env(pid_t parent, const std::string& variable, const std::string& value) {
  std::vector<pid_t> found;
  const std::string wanted = variable + "=" + value;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": the command may hold spaces, so read after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 1));
    char state = 0;
    pid_t ppid = 0;
    if (!(rest >> state >> ppid) || ppid != parent) continue;
    std::ifstream environ(entry.path() / "environ");
    std::string var;
    while (std::getline(environ, var, '\0'))
      if (var == wanted) found.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return found;
}

}  // namespace gantry::testing
