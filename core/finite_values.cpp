#include "core/finite_values.h"

#include <cmath>

namespace gantry {

namespace {
bool is_floating_point(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
}  // namespace

std::optional<NonFiniteValue> first_nonfinite(const Tensor& tensor) {
  if (!tensor.defined() || !is_floating_point(tensor.dtype()) || tensor.numel() == 0) return std::nullopt;
  const Tensor host = tensor.to(Device::cpu()).to(DType::F32);  // no copy for a CPU f32 tensor
  const float* values = host.data<float>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (!std::isfinite(values[i])) return NonFiniteValue{i, values[i]};
  return std::nullopt;
}

const char* nonfinite_name(float value) { return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf"; }

void check_finite(const Tensor& tensor, const std::string& what) {
  const std::optional<NonFiniteValue> bad = first_nonfinite(tensor);
  if (!bad) return;
  GANTRY_FAIL(what, ": expected finite values, found ", nonfinite_name(bad->value), " at index ", bad->index, " of ", tensor.shape().str());
}

}  // namespace gantry
