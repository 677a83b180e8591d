#include "core/storage.h"

#include <algorithm>
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

void Storage::set_blocked(int64_t n, int64_t c, int64_t hw, int64_t block, bool bf16) {
  GANTRY_CHECK(device_.is_cpu() && block > 0 && c % block == 0 &&
                   static_cast<size_t>(n * c * hw) * sizeof(float) == bytes_,
               "storage: internal error, a blocked layout needs a whole CPU f32 buffer of "
               "(N, C, H*W) with C a multiple of the block ", block, ", found (", n, ", ", c, ", ",
               hw, ") over ", bytes_, " bytes on ", device_.str());
  blocked_n_ = n;
  blocked_c_ = c;
  blocked_hw_ = hw;
  block_ = block;
  state_.store(bf16 ? State::BlockedBf16 : State::Blocked, std::memory_order_release);
}

namespace {

std::mutex& conversion_mutex() {  // rare, and only ever contended by two readers of one tensor
  static std::mutex mutex;
  return mutex;
}

// Widens n bf16 values at the start of `values` to f32 in place, a chunk at a time from the back:
// chunk [begin, end) writes bytes [4 begin, 4 end), which hold bf16 values 2 begin and above,
// i.e. its own (read into `chunk` first) and those of chunks already done.
void widen_bf16_in_place(float* values, int64_t n) {
  const uint16_t* halves = reinterpret_cast<const uint16_t*>(values);
  constexpr int64_t kChunk = 256;
  uint32_t chunk[kChunk];
  for (int64_t end = n; end > 0;) {
    const int64_t begin = std::max<int64_t>(0, end - kChunk);
    for (int64_t i = begin; i < end; ++i) chunk[i - begin] = static_cast<uint32_t>(halves[i]) << 16;
    std::memcpy(values + begin, chunk, static_cast<size_t>(end - begin) * sizeof(float));
    end = begin;
  }
}

}  // namespace

void Storage::widen_to_f32() const {
  if (!blocked_bf16()) return;
  std::lock_guard<std::mutex> lock(conversion_mutex());
  if (state_.load(std::memory_order_relaxed) != State::BlockedBf16) return;
  widen_bf16_in_place(static_cast<float*>(data_), blocked_n_ * blocked_c_ * blocked_hw_);
  state_.store(State::Blocked, std::memory_order_release);
}

// Chunk (image, channel block) holds hw x block values, pixel-major in the blocked layout and
// channel-major in the plain one, at the same offset in both (Note [blocked activations] in
// core/storage.h).
void Storage::make_plain() const {
  widen_to_f32();
  std::lock_guard<std::mutex> lock(conversion_mutex());
  if (state_.load(std::memory_order_relaxed) == State::Plain) return;
  thread_local std::vector<float> chunk;
  const int64_t hw = blocked_hw_, block = block_, chunk_size = hw * block;
  chunk.resize(static_cast<size_t>(chunk_size));
  float* values = static_cast<float*>(data_);
  for (int64_t start = 0; start < blocked_n_ * blocked_c_ * hw; start += chunk_size) {
    std::memcpy(chunk.data(), values + start, chunk_size * sizeof(float));
    for (int64_t lane = 0; lane < block; ++lane)
      for (int64_t i = 0; i < hw; ++i) values[start + lane * hw + i] = chunk[i * block + lane];
  }
  state_.store(State::Plain, std::memory_order_release);
}

}  // namespace gantry
