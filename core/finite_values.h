// Whether a tensor's values are all finite: loaded state (every checkpoint tensor), image sets
// and noise are refused with the first NaN or infinity they hold, as the NaN guard refuses a
// training step (hooks/nan_guard_hook.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"

namespace gantry {

struct NonFiniteValue {
  int64_t index = 0;  // flat, row-major
  float value = 0;    // NaN or an infinity
};

// The first NaN or infinity of a floating-point tensor (f32, f16, bf16; on any device), or
// nothing; integer tensors hold none.
std::optional<NonFiniteValue> first_nonfinite(const Tensor& tensor);

// "nan", "inf" or "-inf".
const char* nonfinite_name(float value);

// Throws "<what>: expected finite values, found nan at index 3 of (2, 3)" for the first one.
void check_finite(const Tensor& tensor, const std::string& what);

}  // namespace gantry
