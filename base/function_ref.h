// FunctionRef<R(Args...)>: a non-owning reference to a callable (like C++26 std::function_ref),
// for functions that call a callable before they return and never keep it (Strategy::run and
// ReplicaThreads::run). Unlike a std::function it never allocates (a lambda with more than two
// captured references would cost std::function a heap allocation per call). Made implicitly
// from any callable, so callers pass a lambda as before; the callable must outlive the call
// (a lambda written in the argument list lives until the end of the full expression).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace gantry {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                                                    std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): passed like a std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        invoke_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return invoke_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*invoke_)(void*, Args...);
};

}  // namespace gantry
