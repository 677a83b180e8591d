#include "core/storage.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "base/error.h"

namespace gantry {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  data_ = bytes ? backend_for(device).allocate(bytes, device) : nullptr;
}

Storage::~Storage() {
  if (data_) backend_for(device_).deallocate(data_, bytes_, device_);
}

void Storage::set_blocked(int64_t n, int64_t c, int64_t hw, int64_t block) {
  GANTRY_CHECK(device_.is_cpu() && block > 0 && c % block == 0 &&
                   static_cast<size_t>(n * c * hw) * sizeof(float) == bytes_,
               "storage: internal error, a blocked layout needs a whole CPU f32 buffer of "
               "(N, C, H*W) with C a multiple of the block ", block, ", found (", n, ", ", c, ", ",
               hw, ") over ", bytes_, " bytes on ", device_.str());
  blocked_n_ = n;
  blocked_c_ = c;
  blocked_hw_ = hw;
  block_ = block;
  blocked_.store(true, std::memory_order_release);
}

// Note [blocked activations]: chunk (image, channel block) holds hw x block values, pixel-major
// in the blocked layout and channel-major in the plain one, at the same offset in both.
void Storage::make_plain() const {
  static std::mutex mutex;  // rare, and only ever contended by two readers of one tensor
  std::lock_guard<std::mutex> lock(mutex);
  if (!blocked_.load(std::memory_order_relaxed)) return;
  thread_local std::vector<float> chunk;
  const int64_t hw = blocked_hw_, block = block_, chunk_size = hw * block;
  chunk.resize(static_cast<size_t>(chunk_size));
  float* values = static_cast<float*>(data_);
  for (int64_t start = 0; start < blocked_n_ * blocked_c_ * hw; start += chunk_size) {
    std::memcpy(chunk.data(), values + start, chunk_size * sizeof(float));
    for (int64_t lane = 0; lane < block; ++lane)
      for (int64_t i = 0; i < hw; ++i) values[start + lane * hw + i] = chunk[i * block + lane];
  }
  blocked_.store(false, std::memory_order_release);
}

}  // namespace gantry
