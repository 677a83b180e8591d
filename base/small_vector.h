// SmallVector<T, N>: a vector whose first N elements live inside the object, so the short lists
// of the autograd hot path (edges, gradients, saved tensors of one node) need no heap. Beyond N
// it moves to the heap like std::vector.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <utility>

namespace gantry {

template <typename T, size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector: N must be positive");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(std::initializer_list<T> init) : SmallVector(init.begin(), init.end()) {}
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  SmallVector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  SmallVector(const SmallVector& other) : SmallVector(other.begin(), other.end()) {}
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      for (const T& v : other) push_back(v);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      release_heap();
      take(other);
    }
    return *this;
  }
  ~SmallVector() {
    clear();
    release_heap();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {  // made before growing: `args` may refer to an element
      T value(std::forward<Args>(args)...);
      grow(capacity_ * 2);
      return *new (data_ + size_++) T(std::move(value));
    }
    return *new (data_ + size_++) T(std::forward<Args>(args)...);
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void pop_back() { data_[--size_].~T(); }
  void clear() {
    while (size_) pop_back();
  }
  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  // New elements are value-initialised (default-constructed, false, 0).
  void resize(size_t n) {
    reserve(n);
    while (size_ > n) pop_back();
    while (size_ < n) emplace_back();
  }
  void assign(size_t n, const T& value) {
    clear();
    reserve(n);
    while (size_ < n) emplace_back(value);
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  bool on_heap() const { return data_ != reinterpret_cast<const T*>(inline_); }
  void release_heap() {
    if (on_heap()) ::operator delete(static_cast<void*>(data_));
    data_ = inline_data();
    capacity_ = N;
  }
  void grow(size_t n) {
    T* bigger = static_cast<T*>(::operator new(n * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      new (bigger + i) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (on_heap()) ::operator delete(static_cast<void*>(data_));
    data_ = bigger;
    capacity_ = n;
  }
  // Requires this to be empty and inline.
  void take(SmallVector& other) {
    if (other.on_heap()) {
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_data();
      other.size_ = 0;
      other.capacity_ = N;
      return;
    }
    for (T& v : other) emplace_back(std::move(v));
    other.clear();
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = inline_data();
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace gantry
