#include "backend/conv_math.h"

#include <atomic>


namespace gantry {

namespace {
std::atomic<ConvMath> g_conv_math{ConvMath::F32};
}  // namespace

void set_conv_math(ConvMath math) { g_conv_math = math; }
ConvMath conv_math() { return g_conv_math.load(); }

std::string conv_math_name(ConvMath math) { return math == ConvMath::BF16 ? "bf16" : "f32"; }

}  // namespace gantry
