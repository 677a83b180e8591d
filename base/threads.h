// The CPU thread budget. One process-wide setting (set_num_threads, or GANTRY_NUM_THREADS in
// the environment; default = cores), and a per-thread override so each CPU replica running on
// its own thread can get its own share (ThreadBudgetScope).
#pragma once

namespace gantry {

int hardware_threads();
void set_num_threads(int n);  // process-wide; n >= 1
int num_threads();            // this thread's budget: its override if any, else the global one

class ThreadBudgetScope {
 public:
  explicit ThreadBudgetScope(int n);
  ~ThreadBudgetScope();
  ThreadBudgetScope(const ThreadBudgetScope&) = delete;
  ThreadBudgetScope& operator=(const ThreadBudgetScope&) = delete;

 private:
  int previous_;
};

}  // namespace gantry
