// The SwiGLU feed-forward of LLaMA and GAT: out = w2(silu(w1 x) * w3 x), three nn::Linear
// children named as LLaMA's FeedForward (state "w1.weight", "w2.weight", "w3.weight" and, with
// bias, "w1.bias", ...): w1 and w3 map dim -> hidden, w2 hidden -> dim. No bias by default (as
// LLaMA). x is (..., dim): the leading dimensions are flattened for the linear maps and restored.
// Composed of differentiable ops (ops::swiglu): derivatives of every order.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class SwiGLU : public Cloneable<SwiGLU> {
 public:
  // Parameters drawn with PyTorch's default Linear initialisation from init::key_for(key, "w1"), ...
  SwiGLU(int64_t dim, int64_t hidden, bool bias = false, RngKey key = {});

  int64_t dim() const { return dim_; }
  int64_t hidden() const { return hidden_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (..., dim) -> (..., dim)

 private:
  int64_t dim_, hidden_;
  bool bias_;
};

}  // namespace gantry::nn
