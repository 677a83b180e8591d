// Linear: y = x w^T + b, weight [out, in] as torch.nn.Linear.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class Linear : public Cloneable<Linear> {
 public:
  // Parameters drawn with PyTorch's default initialisation from `key`.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, RngKey key = {});

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, in) -> (N, out)

 private:
  int64_t in_, out_;
  bool bias_;
};

}  // namespace gantry::nn
