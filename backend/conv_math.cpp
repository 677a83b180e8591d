#include "backend/conv_math.h"

#include <atomic>

#include "backend/cpu/onednn_context.h"

namespace gantry {

namespace {
std::atomic<ConvMath> g_conv_math{ConvMath::F32};
}  // namespace

void set_conv_math(ConvMath math) { g_conv_math = math; }
ConvMath conv_math() { return g_conv_math.load(); }

std::string conv_math_name(ConvMath math) {
  switch (math) {
    case ConvMath::BF16: return "bf16";
    case ConvMath::F16: return "f16";
    case ConvMath::F32: break;
  }
  return "f32";
}

DType conv_math_operand_type(ConvMath math) {
  switch (math) {
    case ConvMath::BF16: return DType::BF16;
    case ConvMath::F16: return DType::F16;
    case ConvMath::F32: break;
  }
  return DType::F32;
}

std::string conv_math_unavailable(ConvMath math, const Device& device) {
  if (!device.is_cpu()) return "";
  if (math == ConvMath::BF16 && !cpu::onednn_has_native_bf16())
    return "bf16 convolutions need a CPU with avx512_bf16 or AMX; this one has neither (gan_devices tells)";
  if (math == ConvMath::F16)
    return "f16 mixed precision runs on CUDA devices only; on the CPU use bf16 (it needs no loss scaling)";
  return "";
}

}  // namespace gantry
