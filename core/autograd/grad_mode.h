// Whether ops record history on this thread. Backward runs with recording on only when
// create_graph is set, so first-order backward never builds a graph.
#pragma once

namespace gantry::autograd {

class GradMode {
 public:
  static bool enabled();
  static void set_enabled(bool enabled);
};

// Disables recording for its lifetime (like torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(GradMode::enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~GradModeGuard() { GradMode::set_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace gantry

namespace gantry {
using autograd::NoGradGuard;
}
