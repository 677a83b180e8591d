#include "support/blocked_copy.h"

#include <vector>

#include "backend/cpu/half.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::testing {

Tensor blocked_copy(const Tensor& t, bool bf16) {
  const int64_t n = t.size(0), c = t.size(1), hw = t.size(2) * t.size(3);
  const int64_t block = cpu::channel_block();
  const std::vector<float> plain = t.to_vector();
  Tensor out = Tensor::empty(t.shape());
  void* dst = out.storage()->native_data();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const float v = plain[(i * c + ch) * hw + p];
        const int64_t at = ((i * (c / block) + ch / block) * hw + p) * block + ch % block;
        if (!bf16) {
          static_cast<float*>(dst)[at] = v;
          continue;
        }
        GANTRY_CHECK(bf16_to_float(float_to_bf16(v)) == v, "blocked_copy: ", v, " is not a bf16 value");
        static_cast<uint16_t*>(dst)[at] = float_to_bf16(v);
      }
  out.set_layout(bf16 ? Layout::ChannelBlockedBf16 : Layout::ChannelBlocked);
  return out;
}

}  // namespace gantry::testing
