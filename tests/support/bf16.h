// Rounding to bf16 by hand, to check mixed-precision kernels against f32 math on rounded operands.
#pragma once

#include "backend/conv_math.h"
#include "core/tensor.h"

namespace gantry::testing {

// Every element rounded to nearest even on bf16's 8 significant bits (as the f32 -> bf16
// conversions of oneDNN and CUDA do), kept in f32.
Tensor round_to_bf16(const Tensor& t);

// Whether bf16 convolutions write channel-blocked bf16 activations on this CPU (Note [bf16
// activations] in core/storage.h). With AMX, oneDNN 2.6 runs them as brgemm kernels on
// channels-last activations, which that chain does not take (their outputs are widened to f32);
// forcing the blocked layout there made DCGAN's bf16 step a third slower (docs/performance.md).
bool bf16_conv_writes_blocked_activations();

// Sets the process-wide conv/matmul math while it lives, then restores the previous one.
class ConvMathScope {
 public:
  explicit ConvMathScope(ConvMath math) : previous_(conv_math()) { set_conv_math(math); }
  ~ConvMathScope() { set_conv_math(previous_); }
  ConvMathScope(const ConvMathScope&) = delete;
  ConvMathScope& operator=(const ConvMathScope&) = delete;

 private:
  ConvMath previous_;
};

}  // namespace gantry::testing
