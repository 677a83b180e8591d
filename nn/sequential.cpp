#include "nn/sequential.h"

#include "nn/activation.h"
#include "nn/batch_norm.h"

namespace gantry::nn {

Sequential::Sequential(std::vector<ModulePtr> modules) : Cloneable("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}

ModulePtr Sequential::push_back(ModulePtr module) {
  return register_module(std::to_string(num_children()), std::move(module));
}

namespace {

// The activation a BatchNorm2d followed by `next` can run fused (Note [batch norm + activation]):
// ReLU, or LeakyReLU with a slope >= 0 (the fused backward reads the derivative off the output's
// sign); none for anything else or a module with pre-hooks.
BatchNormActivation fusable_activation(const Module& next) {
  BatchNormActivation act;
  if (next.has_pre_hooks()) return act;
  if (dynamic_cast<const ReLU*>(&next) != nullptr) act.kind = BatchNormActivation::Kind::Relu;
  if (const auto* leaky = dynamic_cast<const LeakyReLU*>(&next);
      leaky != nullptr && leaky->negative_slope() >= 0) {
    act.kind = BatchNormActivation::Kind::LeakyRelu;
    act.negative_slope = static_cast<float>(leaky->negative_slope());
  }
  return act;
}

}  // namespace

Tensor Sequential::forward_impl(const Tensor& x) {
  Tensor y = x;
  const auto& children = named_children();
  for (size_t i = 0; i < children.size(); ++i) {
    Module& m = *children[i].second;
    auto* bn = dynamic_cast<BatchNorm2d*>(&m);
    if (bn != nullptr && !bn->has_pre_hooks() && i + 1 < children.size()) {
      if (const BatchNormActivation act = fusable_activation(*children[i + 1].second); act.enabled()) {
        y = bn->forward_activated(y, act);
        ++i;  // the activation ran inside
        continue;
      }
    }
    y = m.forward(y);
  }
  return y;
}

}  // namespace gantry::nn
