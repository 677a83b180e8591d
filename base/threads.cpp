#include "base/threads.h"

#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/error.h"

namespace gantry {

namespace {

// Whether GANTRY_NUM_THREADS or set_num_threads chose the budget (set_default_num_threads then
// leaves it alone).
std::atomic<bool>& budget_chosen() {
  static std::atomic<bool> chosen{std::getenv("GANTRY_NUM_THREADS") != nullptr};
  return chosen;
}

int initial_threads() {
  if (const char* env = std::getenv("GANTRY_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    GANTRY_CHECK(end && *end == '\0' && n >= 1, "GANTRY_NUM_THREADS: expected a positive integer, "
                 "found '", env, "'");
    return static_cast<int>(n);
  }
  return available_cpus();
}

std::atomic<int>& global_threads() {
  static std::atomic<int> n{initial_threads()};
  return n;
}

thread_local int thread_override = 0;

}  // namespace

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return hardware_threads();
}

void set_num_threads(int n) {
  GANTRY_CHECK(n >= 1, "set_num_threads: expected a positive count, found ", n);
  budget_chosen() = true;
  global_threads() = n;
}

void set_default_num_threads(int n) {
  GANTRY_CHECK(n >= 1, "set_default_num_threads: expected a positive count, found ", n);
  if (!budget_chosen()) global_threads() = n;
}

int num_threads() { return thread_override > 0 ? thread_override : global_threads().load(); }

ThreadBudgetScope::ThreadBudgetScope(int n) : previous_(thread_override) {
  GANTRY_CHECK(n >= 1, "ThreadBudgetScope: expected a positive count, found ", n);
  thread_override = n;
}

ThreadBudgetScope::~ThreadBudgetScope() { thread_override = previous_; }

}  // namespace gantry
