// Helpers shared by the op implementations: argument checks, output allocation and recording
// a backward node written as a lambda.
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "backend/backend.h"
#include "base/array_ref.h"
#include "base/inline_function.h"
#include "base/small_vector.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops/ops.h"
#include "core/pool_allocator.h"

namespace gantry::ops::detail {

using autograd::Node;
using autograd::SavedTensor;

// Checks that every defined tensor is f32 on the same device; returns that device.
Device check_f32_same_device(const char* op, std::initializer_list<const Tensor*> tensors);
void check_rank(const char* op, const char* what, const Tensor& t, int rank);
Backend& backend_of(const Tensor& t);

using autograd::GradList;

// Room for a backward lambda's captures inside its node (Note [pooled objects]): enough for the
// largest, convolution's parameters and two shapes.
constexpr size_t kBackwardCaptureBytes = 160;

// backward(grads, saved, node) -> one gradient per input (undefined where not needed).
using BackwardFn = InlineFunction<GradList(const GradList& grads, const GradList& saved,
                                           const Node& node),
                                  kBackwardCaptureBytes>;

class LambdaNode final : public Node {
 public:
  // `name` must outlive the node (a string literal).
  template <typename F>
  LambdaNode(const char* name, F&& fn) : name_(name), fn_(std::forward<F>(fn)) {}
  std::string name() const override { return name_; }
  GradList apply(GradList&& grads) override;
  void release_saved() override;
  SmallVector<SavedTensor, 5>& saved() { return saved_; }

 private:
  const char* name_;
  BackwardFn fn_;
  SmallVector<SavedTensor, 5> saved_;  // training batch norm with an activation saves 5
};

struct Save {
  Tensor tensor;
  bool is_output = false;
};

// A backward written against std::vector lists (the form before GradList) still records; its
// lists are converted per call, which allocates: new code takes and returns GradList.
template <typename F>
auto as_backward(F&& fn) {
  if constexpr (std::is_invocable_v<F&, const GradList&, const GradList&, const Node&>) {
    return std::forward<F>(fn);
  } else {
    return [f = std::forward<F>(fn)](const GradList& g, const GradList& s, const Node& n) {
      TensorList r = f(TensorList(g.begin(), g.end()), TensorList(s.begin(), s.end()), n);
      return GradList(r.begin(), r.end());
    };
  }
}

// Records `name`'s backward for `outputs` when recording is on and an input requires grad.
// `saves` are unpacked (in order) into the `saved` list the backward receives. `name` must be a
// string literal. The lists are views (braced lists or vectors): nothing is copied to the heap.
template <typename F>
void record(const char* name, ArrayRef<Tensor*> outputs, ArrayRef<Tensor> inputs,
            ArrayRef<Save> saves, F&& fn) {
  if (!autograd::any_requires_grad(inputs)) return;
  auto node = make_pooled<LambdaNode>(name, as_backward(std::forward<F>(fn)));
  autograd::set_history(outputs, node, inputs);
  // Saved after set_history: a saved output shares its impl with the output, which now has
  // its grad_fn, so SavedTensor records the history it must re-attach when unpacked.
  for (const Save& s : saves) node->saved().emplace_back(s.tensor, s.is_output);
}
template <typename F>
void record(const char* name, Tensor& output, ArrayRef<Tensor> inputs, ArrayRef<Save> saves,
            F&& fn) {
  record(name, {&output}, inputs, saves, std::forward<F>(fn));
}

// Error for ops whose backward is not differentiable again: recorded as the grad_fn of their
// gradients when create_graph is on, it fails when a second derivative reaches it.
void record_not_twice_differentiable(const char* name, ArrayRef<Tensor*> outputs,
                                     ArrayRef<Tensor> inputs);

}  // namespace gantry::ops::detail

namespace gantry::ops {
using autograd::GradList;  // what backward lambdas take and return
}  // namespace gantry::ops
