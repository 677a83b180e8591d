#include "support/collective_checks.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gantry::testing {

namespace {

std::string mismatch(const char* what, size_t len, size_t i, float got, float want) {
  return std::string(what) + ", length " + std::to_string(len) + ", index " + std::to_string(i) + ": got " +
         std::to_string(got) + ", expected " + std::to_string(want);
}

}  // namespace

std::string check_collectives(distribute::Communicator& comm) {
  using distribute::ReduceKind;
  const int size = comm.size(), rank = comm.rank();
  const float rank_sum = size * (size + 1) / 2.0f;
  for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{4097}}) {
    for (int repeat = 0; repeat < 3; ++repeat) {  // repeated calls reuse the communicator
      std::vector<float> sum(len);
      for (size_t i = 0; i < len; ++i) sum[i] = static_cast<float>(rank + 1) * (i + 1);
      std::vector<float> mean = sum, max = sum;
      comm.all_reduce(sum, ReduceKind::Sum);
      comm.all_reduce(mean, ReduceKind::Mean);
      comm.all_reduce(max, ReduceKind::Max);
      for (size_t i = 0; i < len; ++i) {
        const float want = rank_sum * (i + 1);
        if (std::abs(sum[i] - want) > 1e-6f * want) return mismatch("sum", len, i, sum[i], want);
        if (std::abs(mean[i] - want / size) > 1e-6f * want) return mismatch("mean", len, i, mean[i], want / size);
        if (max[i] != static_cast<float>(size) * (i + 1)) return mismatch("max", len, i, max[i], size * (i + 1.f));
      }
    }
  }
  // Every rank holds the same bits even where the order of summation matters: values whose
  // float sum depends on it, rotated by rank, and rank 0's result broadcast must change nothing.
  const float order_sensitive[4] = {1e8f, 1.f, -1e8f, 3e-3f};
  std::vector<float> mixed(64);
  for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = order_sensitive[(i + rank) % 4] * (1.f + 0.01f * i);
  comm.all_reduce(mixed, ReduceKind::Sum);
  std::vector<float> first = mixed;
  comm.broadcast(first, 0);
  for (size_t i = 0; i < mixed.size(); ++i)
    if (std::bit_cast<uint32_t>(first[i]) != std::bit_cast<uint32_t>(mixed[i]))
      return mismatch("sum (same bits on every rank)", mixed.size(), i, mixed[i], first[i]);
  for (int root = 0; root < size; ++root) {
    std::vector<float> v(5, static_cast<float>(rank));
    comm.broadcast(v, root);
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != static_cast<float>(root)) return mismatch("broadcast", v.size(), i, v[i], static_cast<float>(root));
  }
  std::vector<float> in{static_cast<float>(rank), 0.5f * rank}, out(2 * size, -1.f);
  comm.all_gather(in, out);
  for (int q = 0; q < size; ++q) {  // rank order
    if (out[2 * q] != static_cast<float>(q)) return mismatch("all_gather", out.size(), 2 * q, out[2 * q], q);
    if (out[2 * q + 1] != 0.5f * q) return mismatch("all_gather", out.size(), 2 * q + 1, out[2 * q + 1], 0.5f * q);
  }
  comm.barrier();
  return "";
}

}  // namespace gantry::testing
