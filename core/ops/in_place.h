// In-place operations (PyTorch's trailing underscore): each writes into `self`'s storage through
// the backend of its device and bumps its version, so a graph that saved `self` before the write
// refuses to run backward through the stale value (Note [optimizer updates] relies on the same).
// They are not recorded by autograd: while recording is on, `self` must not require grad (as
// PyTorch refuses in-place writes to leaves that require grad). Callers above core/ use these
// instead of reaching for the backend and remembering bump_version themselves.
#pragma once

#include "core/tensor.h"

namespace gantry::ops {

// self <- src: any device and dtype to self's (f32 via a conversion when the dtypes differ).
void copy_(const Tensor& self, const Tensor& src);
void fill_(const Tensor& self, double value);
// self <- self * factor (f32)
void mul_(const Tensor& self, float factor);
// self <- self + other (f32, same shape and device)
void add_(const Tensor& self, const Tensor& other);
// self <- self + weight (end - self), with ATen's two-sided formula (end - (end - self)(1 - weight)
// for weight >= 0.5, more exact near 1). `weight` is taken in double so that 1 - weight is exact
// for a weight such as 1 - beta with beta an f32 (Note [EMA on the device] in nn/ema.cpp).
void lerp_(const Tensor& self, const Tensor& end, double weight);

}  // namespace gantry::ops
