// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, param *= 1 - lr * wd before
// the Adam update, as torch.optim.AdamW (default weight_decay 0.01).
#pragma once

#include "nn/adam.h"

namespace gantry::nn {

class AdamW : public Adam {
 public:
  // `o.weight_decay` is the decoupled decay; AdamW's default is 0.01.
  AdamW(std::vector<Tensor> params, AdamOptions o = default_options());
  static AdamOptions default_options() {
    AdamOptions o;
    o.weight_decay = 1e-2;
    return o;
  }
};

}  // namespace gantry::nn
