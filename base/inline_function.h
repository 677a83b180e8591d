// InlineFunction<R(Args...), Capacity>: a callable stored inside the object, for the backward
// lambdas of autograd nodes, whose captures (shapes, conv parameters) exceed std::function's
// small buffer and would cost a heap allocation per recorded op. A callable larger than
// Capacity is a compile error, not a silent allocation. Constructed in place; neither copied
// nor moved.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace gantry {

template <typename Signature, size_t Capacity>
class InlineFunction;

template <typename R, typename... Args, size_t Capacity>
class InlineFunction<R(Args...), Capacity> {
 public:
  template <typename F, typename Fn = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Fn, InlineFunction>>>
  explicit InlineFunction(F&& f) {
    static_assert(sizeof(Fn) <= Capacity, "InlineFunction: the callable (its captures) is larger "
                  "than Capacity; capture less or raise Capacity");
    static_assert(alignof(Fn) <= alignof(std::max_align_t), "InlineFunction: over-aligned callable");
    new (storage_) Fn(std::forward<F>(f));
    invoke_ = [](void* p, Args... args) -> R {
      return (*static_cast<Fn*>(p))(std::forward<Args>(args)...);
    };
    destroy_ = [](void* p) { static_cast<Fn*>(p)->~Fn(); };
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { destroy_(storage_); }

  R operator()(Args... args) const { return invoke_(storage_, std::forward<Args>(args)...); }

 private:
  alignas(std::max_align_t) mutable unsigned char storage_[Capacity];
  R (*invoke_)(void*, Args...);
  void (*destroy_)(void*);
};

}  // namespace gantry
