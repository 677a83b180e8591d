// Element types. Compute is f32; f16/bf16 are storage types for GPU mixed precision;
// i64 holds labels and indices; u8 holds raw images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gantry {

enum class DType : uint8_t { F32, F16, BF16, I64, U8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 0;
}

std::string to_string(DType t);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }

}  // namespace gantry
