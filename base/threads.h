// The CPU thread budget. One process-wide setting (set_num_threads, or GANTRY_NUM_THREADS in
// the environment; default = the CPUs this process may run on, or a share of them chosen by a
// caller that knows better: set_default_num_threads), and a per-thread override so each CPU
// replica running on its own thread can get its own share (ThreadBudgetScope).
#pragma once

namespace gantry {

int hardware_threads();  // the machine's online CPUs
int available_cpus();    // the CPUs this process may run on (its affinity: taskset, a launcher's binding)
void set_num_threads(int n);  // process-wide; n >= 1
// The process-wide budget unless GANTRY_NUM_THREADS or set_num_threads chose one (n >= 1).
void set_default_num_threads(int n);
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
