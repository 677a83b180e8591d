// Rounding to bf16 by hand, to check mixed-precision kernels against f32 math on rounded operands.
#pragma once

#include "core/tensor.h"

namespace gantry::testing {

// Every element rounded to nearest even on bf16's 8 significant bits (as the f32 -> bf16
// conversions of oneDNN and CUDA do), kept in f32.
Tensor round_to_bf16(const Tensor& t);

}  // namespace gantry::testing
