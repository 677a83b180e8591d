// The pending sum of Note [w average] (gan/networks/style_generator.h), shared by the style-based
// generators: training forwards add their w while tracking is on; the estimator takes the sum,
// adds it over the replicas and hands it back to update w_avg once per G update.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace gantry::gan {

class WAverageTracker {
 public:
  void set_tracking(bool on) { tracking_ = on; }
  bool tracking() const { return tracking_; }
  // Adds the rows of w (N, w_dim) to the pending sum.
  void add(const Tensor& w);
  // Moves the pending sum into `out` (w_dim + 1 values, the count last; zeros when nothing was added).
  void take(std::vector<float>& out, int64_t w_dim);
  // lerp(mean w, w_avg, beta) from summed values (w_dim + 1, the count last); w_avg itself when the
  // count is 0. `what` names the generator in the error for a wrong length.
  static Tensor updated(const Tensor& w_avg, const std::vector<float>& summed, float beta, const char* what);

 private:
  bool tracking_ = false;
  Tensor sum_;  // (w_dim,)
  float count_ = 0.f;
};

}  // namespace gantry::gan
