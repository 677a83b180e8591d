// Mixed precision for convolutions (off by default): under ConvMath::BF16 a convolution reads
// its operands as bf16 and accumulates and writes in f32, so activations, gradients, weights and
// optimizer state all stay f32 (the f32 "master weights" of mixed-precision training). A
// process-wide policy, like torch.backends' TF32 switch; backends that cannot run it say so.
#pragma once

#include <cstdint>
#include <string>

#include "core/device.h"

namespace gantry {

enum class ConvMath : uint8_t { F32, BF16 };

void set_conv_math(ConvMath math);
ConvMath conv_math();
std::string conv_math_name(ConvMath math);  // "f32" or "bf16"

// Why `math` cannot run on `device`, or "" when it can: bf16 on the CPU needs oneDNN's native bf16
// kernels (avx512_bf16 or AMX); emulated ones would be slower than f32.
std::string conv_math_unavailable(ConvMath math, const Device& device);

}  // namespace gantry
