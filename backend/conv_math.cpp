#include "backend/conv_math.h"

#include <atomic>

#include "backend/backend.h"

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
  // A device without a backend here (no GPU, or none compiled in) fails on first use instead.
  if (!backend_available(device.kind)) return "";
  return backend_for(device).conv_math_unavailable(math);
}

}  // namespace gantry
