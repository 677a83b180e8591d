// ArrayRef<T>: a read-only view of contiguous elements (like std::span<const T>) that can also
// be made from a braced list, so `f({a, b})` and `f(vector)` both pass a list without building
// a std::vector. The braced list lives until the end of the full expression: do not store it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace gantry {

template <typename T>
class ArrayRef {
 public:
  ArrayRef() = default;
  ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // the contract above: a parameter only
#endif
  ArrayRef(std::initializer_list<T> list) : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  // Any other contiguous container with data() and size() (SmallVector).
  template <typename C, typename = decltype(static_cast<const T*>(std::declval<const C&>().data()))>
  ArrayRef(const C& c) : data_(c.data()), size_(c.size()) {}

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gantry
