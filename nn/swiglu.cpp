#include "nn/swiglu.h"

#include <memory>

#include "core/ops/ops.h"
#include "nn/init.h"
#include "nn/linear.h"

namespace gantry::nn {

SwiGLU::SwiGLU(int64_t dim, int64_t hidden, bool bias, RngKey key)
    : Cloneable("SwiGLU"), dim_(dim), hidden_(hidden), bias_(bias) {
  GANTRY_CHECK(dim_ > 0 && hidden_ > 0, "SwiGLU: expected positive dim and hidden sizes, found ", dim_,
               " and ", hidden_);
  register_module("w1", std::make_shared<Linear>(dim_, hidden_, bias_, init::key_for(key, "w1")));
  register_module("w2", std::make_shared<Linear>(hidden_, dim_, bias_, init::key_for(key, "w2")));
  register_module("w3", std::make_shared<Linear>(dim_, hidden_, bias_, init::key_for(key, "w3")));
}

Tensor SwiGLU::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() >= 2 && x.size(-1) == dim_, "SwiGLU: expected input (N, ..., ", dim_, "), found ",
               x.shape().str());
  Tensor rows = ops::reshape(x, Shape{x.numel() / dim_, dim_});  // nn::Linear takes (N, in)
  Tensor gated = ops::swiglu(child("w1")->forward(rows), child("w3")->forward(rows));
  return ops::reshape(child("w2")->forward(gated), x.shape());
}

std::string SwiGLU::extra_repr() const {
  return "dim=" + std::to_string(dim_) + ", hidden=" + std::to_string(hidden_) +
         ", bias=" + (bias_ ? "true" : "false");
}

}  // namespace gantry::nn
