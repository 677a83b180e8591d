#include "backend/conv_math.h"

#include <atomic>

#include "backend/cpu/onednn_context.h"


namespace gantry {

namespace {
std::atomic<ConvMath> g_conv_math{ConvMath::F32};
}  // namespace

void set_conv_math(ConvMath math) { g_conv_math = math; }
ConvMath conv_math() { return g_conv_math.load(); }

std::string conv_math_name(ConvMath math) { return math == ConvMath::BF16 ? "bf16" : "f32"; }

std::string conv_math_unavailable(ConvMath math, const Device& device) {
  if (math == ConvMath::BF16 && device.is_cpu() && !cpu::onednn_has_native_bf16())
    return "bf16 convolutions need a CPU with avx512_bf16 or AMX; this one has neither (gan_devices tells)";
  return "";
}

}  // namespace gantry
