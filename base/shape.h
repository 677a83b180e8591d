// Shape: up to kMaxRank dimensions, stored inline (no heap). Tensors are contiguous row-major,
// so strides follow from the shape.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace gantry {

constexpr int kMaxRank = 6;  // the public API promises 5-D; one more for internal views

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Negative index counts from the back, as in PyTorch; throws when out of range.
  int64_t size(int i) const;
  int64_t numel() const;
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  void push_back(int64_t d);
  // Contiguous row-major strides, in elements.
  std::array<int64_t, kMaxRank> strides() const;
  std::string str() const;  // "(2, 3, 4)"

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Normalises a possibly negative dimension index for rank `rank`; `op` names the caller.
int normalize_dim(int dim, int rank, const char* op);
// NumPy broadcasting; throws naming `op` and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

}  // namespace gantry
