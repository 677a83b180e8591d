// Helpers shared by the op implementations: argument checks, output allocation and recording
// a backward node written as a lambda.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "backend/backend.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops/ops.h"

namespace gantry::ops::detail {

using autograd::Node;
using autograd::SavedTensor;

// Checks that every defined tensor is f32 on the same device; returns that device.
Device check_f32_same_device(const char* op, std::initializer_list<const Tensor*> tensors);
void check_rank(const char* op, const char* what, const Tensor& t, int rank);
Backend& backend_of(const Tensor& t);

// backward(grads, saved, node) -> one gradient per input (undefined where not needed).
using BackwardFn =
    std::function<TensorList(const TensorList& grads, const TensorList& saved, const Node& node)>;

class LambdaNode final : public Node {
 public:
  LambdaNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  TensorList apply(TensorList&& grads) override;
  void release_saved() override;
  std::vector<SavedTensor>& saved() { return saved_; }

 private:
  std::string name_;
  BackwardFn fn_;
  std::vector<SavedTensor> saved_;
};

struct Save {
  Tensor tensor;
  bool is_output = false;
};

// Records `name`'s backward for `outputs` when recording is on and an input requires grad.
// `saves` are unpacked (in order) into the `saved` list the backward receives.
void record(const char* name, std::vector<Tensor*> outputs, const TensorList& inputs,
            std::vector<Save> saves, BackwardFn fn);
inline void record(const char* name, Tensor& output, const TensorList& inputs,
                   std::vector<Save> saves, BackwardFn fn) {
  record(name, std::vector<Tensor*>{&output}, inputs, std::move(saves), std::move(fn));
}

// Error for ops whose backward is not differentiable again: recorded as the grad_fn of their
// gradients when create_graph is on, it fails when a second derivative reaches it.
void record_not_twice_differentiable(const char* name, std::vector<Tensor*> outputs,
                                     const TensorList& inputs);

}  // namespace gantry::ops::detail
