#include "base/device.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/shape.h"

#include <charconv>

namespace gantry {

std::string to_string(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
  }
  return "?";
}

Device Device::parse(std::string_view text) {
  auto colon = text.find(':');
  std::string_view kind = text.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    std::string_view num = text.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    GANTRY_CHECK(ec == std::errc() && ptr == num.data() + num.size() && index >= 0,
                 "device: expected 'cpu', 'cpu:N' or 'cuda:N', found '", text, "'");
  }
  if (kind == "cpu") return cpu(index);
  if (kind == "cuda") return cuda(index);
  GANTRY_FAIL("device: expected 'cpu', 'cpu:N' or 'cuda:N', found '", text, "'");
}

std::string Device::str() const {
  return std::string(is_cpu() ? "cpu:" : "cuda:") + std::to_string(index);
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  GANTRY_CHECK(static_cast<int>(dims.size()) <= kMaxRank, "shape: expected at most ", kMaxRank,
               " dimensions, found ", dims.size());
  for (int64_t d : dims) push_back(d);
}

Shape::Shape(const std::vector<int64_t>& dims) {
  GANTRY_CHECK(static_cast<int>(dims.size()) <= kMaxRank, "shape: expected at most ", kMaxRank,
               " dimensions, found ", dims.size());
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
  GANTRY_CHECK(rank_ < kMaxRank, "shape: expected at most ", kMaxRank, " dimensions");
  GANTRY_CHECK(d >= 0, "shape: expected non-negative sizes, found ", d);
  dims_[rank_++] = d;
}

int64_t Shape::size(int i) const { return dims_[normalize_dim(i, rank_, "size")]; }

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::array<int64_t, kMaxRank> Shape::strides() const {
  std::array<int64_t, kMaxRank> s{};
  int64_t acc = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= dims_[i];
  }
  return s;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + (rank_ == 1 ? ",)" : ")");
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

int normalize_dim(int dim, int rank, const char* op) {
  int d = dim < 0 ? dim + rank : dim;
  GANTRY_CHECK(d >= 0 && d < rank, op, ": dimension ", dim, " out of range for a tensor of rank ",
               rank);
  return d;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    GANTRY_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a.str(), " and ", b.str(),
                 " cannot be broadcast together");
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

}  // namespace gantry
