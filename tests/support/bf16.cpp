#include "support/bf16.h"

#include <dnnl.hpp>

#include <bit>
#include <cstdint>

#include "core/ops/ops.h"

namespace gantry::testing {

Tensor round_to_bf16(const Tensor& t) {
  std::vector<float> v = t.to_vector();
  for (float& x : v) {
    uint32_t bits = std::bit_cast<uint32_t>(x);
    bits += 0x7fff + ((bits >> 16) & 1);
    x = std::bit_cast<float>(bits & 0xffff0000u);
  }
  return ops::from_vector(v, t.shape());
}

bool bf16_conv_writes_blocked_activations() {
  return dnnl::get_effective_cpu_isa() != dnnl::cpu_isa::avx512_core_amx;
}

}  // namespace gantry::testing
