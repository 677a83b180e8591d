// Mixed precision for the dense products, convolutions and matrix multiplications (off by
// default): under ConvMath::BF16 or ConvMath::F16 they read their operands in that 16-bit type and
// accumulate in f32, so activations, gradients, weights and optimizer state all stay f32 (the f32
// "master weights" of mixed-precision training). A process-wide policy, like torch.backends'
// TF32 switch; backends that cannot run it say so. f16's narrow range needs loss scaling
// (gan/spec/loss_scaler.h); bf16 has f32's range and does not.
#pragma once

#include <cstdint>
#include <string>

#include "base/device.h"
#include "base/dtype.h"

namespace gantry {

enum class ConvMath : uint8_t { F32, BF16, F16 };

void set_conv_math(ConvMath math);
ConvMath conv_math();
std::string conv_math_name(ConvMath math);  // "f32", "bf16" or "f16"
// The type operands are read in: F32, BF16 or F16.
DType conv_math_operand_type(ConvMath math);

// Why `math` cannot run on `device`, or "" when it can: bf16 on the CPU needs oneDNN's native bf16
// kernels (avx512_bf16 or AMX; emulated ones would be slower than f32); f16 runs on CUDA devices
// only.
std::string conv_math_unavailable(ConvMath math, const Device& device);

}  // namespace gantry
