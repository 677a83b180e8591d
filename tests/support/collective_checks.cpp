#include "support/collective_checks.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "distribute/blob_broadcast.h"

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

std::string check_typed_collectives(distribute::Communicator& comm) {
  using distribute::ReduceKind;
  const int size = comm.size(), rank = comm.rank();
  auto fail = [](const std::string& what, size_t i, int64_t got, int64_t want) {
    return what + ", index " + std::to_string(i) + ": got " + std::to_string(got) + ", expected " + std::to_string(want);
  };
  // Rank r holds base + r at index i: base = 2^60 / (i + 1) + 1 is odd, far beyond 2^53, so
  // any detour through float or double would lose the low bits.
  for (size_t len : {size_t{0}, size_t{1}, size_t{5}, size_t{1003}}) {
    std::vector<int64_t> sum(len), max(len);
    auto base = [](size_t i) { return (int64_t{1} << 60) / static_cast<int64_t>(i + 1) | 1; };
    for (size_t i = 0; i < len; ++i) sum[i] = max[i] = base(i) + rank;
    comm.all_reduce(std::span<int64_t>(sum), ReduceKind::Sum);
    comm.all_reduce(std::span<int64_t>(max), ReduceKind::Max);
    for (size_t i = 0; i < len; ++i) {
      // sum over r of (base + r), with base * size kept below 2^63 for size <= 7
      const int64_t want = base(i) * size + static_cast<int64_t>(size) * (size - 1) / 2;
      if (sum[i] != want) return fail("int64 sum, length " + std::to_string(len), i, sum[i], want);
      if (max[i] != base(i) + size - 1) return fail("int64 max, length " + std::to_string(len), i, max[i], base(i) + size - 1);
    }
  }
  std::vector<int64_t> negative{-int64_t{3} * (rank + 1)};
  comm.all_reduce(std::span<int64_t>(negative), ReduceKind::Max);
  if (negative[0] != -3) return fail("int64 max of negatives", 0, negative[0], -3);
  // Mean of integers is refused on every rank before any data moves, so the ranks stay in step.
  std::vector<int64_t> mean{1};
  try {
    comm.all_reduce(std::span<int64_t>(mean), ReduceKind::Mean);
    return "int64 mean: expected an error, found none";
  } catch (const Error& e) {
    if (std::string(e.what()).find("Mean") == std::string::npos)
      return std::string("int64 mean: the error does not name Mean: ") + e.what();
  }
  for (int root = 0; root < size; ++root) {
    std::vector<int64_t> v{(int64_t{1} << 62) + rank, -rank};
    comm.broadcast(std::span<int64_t>(v), root);
    if (v[0] != (int64_t{1} << 62) + root || v[1] != -root) return fail("int64 broadcast", 0, v[0], (int64_t{1} << 62) + root);
    std::vector<std::byte> bytes(3, static_cast<std::byte>(rank));
    comm.broadcast(std::span<std::byte>(bytes), root);
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] != static_cast<std::byte>(root)) return fail("byte broadcast", i, static_cast<int64_t>(bytes[i]), root);
  }
  const int64_t mine[2] = {(int64_t{1} << 55) + rank, -rank};
  std::vector<int64_t> gathered(2 * size);
  comm.all_gather(std::span<const int64_t>(mine), std::span<int64_t>(gathered));
  for (int q = 0; q < size; ++q)
    if (gathered[2 * q] != (int64_t{1} << 55) + q || gathered[2 * q + 1] != -q)
      return fail("int64 all_gather", 2 * q, gathered[2 * q], (int64_t{1} << 55) + q);
  const std::byte text[3] = {std::byte{0}, static_cast<std::byte>(200 + rank), std::byte{255}};
  std::vector<std::byte> texts(3 * size);
  comm.all_gather(std::span<const std::byte>(text), std::span<std::byte>(texts));
  for (int q = 0; q < size; ++q)
    if (texts[3 * q] != std::byte{0} || texts[3 * q + 1] != static_cast<std::byte>(200 + q) || texts[3 * q + 2] != std::byte{255})
      return fail("byte all_gather", 3 * q + 1, static_cast<int64_t>(texts[3 * q + 1]), 200 + q);
  // broadcast_blob: only the root knows the size; 7-byte chunks make the longer ones take many calls.
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{50}, size_t{100003}}) {
    const int root = static_cast<int>(n % size);
    auto expected = [&](size_t i) { return static_cast<std::byte>((i * 131 + n) % 251); };
    std::vector<std::byte> blob;
    if (rank == root)
      for (size_t i = 0; i < n; ++i) blob.push_back(expected(i));
    else
      blob.assign(3, std::byte{7});  // a receiver's stale buffer is replaced, not appended to
    blob = distribute::broadcast_blob(comm, std::move(blob), root, n > 1000 ? 4096 : 7);
    if (blob.size() != n) return fail("broadcast_blob size", 0, static_cast<int64_t>(blob.size()), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i)
      if (blob[i] != expected(i)) return fail("broadcast_blob", i, static_cast<int64_t>(blob[i]), static_cast<int64_t>(expected(i)));
  }
  comm.barrier();
  return "";
}

}  // namespace gantry::testing
