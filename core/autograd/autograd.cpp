// Node bookkeeping, saved tensors and the grad-mode flag.
#include <atomic>

#include "core/autograd/accumulate_grad.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/autograd/saved_tensor.h"
#include "core/pool_allocator.h"

namespace gantry::autograd {

namespace {
thread_local bool grad_mode_enabled = true;
std::atomic<uint64_t> next_sequence_nr_counter{0};
}  // namespace

bool GradMode::enabled() { return grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { grad_mode_enabled = enabled; }

Node::Node() : sequence_nr_(next_sequence_nr_counter.fetch_add(1, std::memory_order_relaxed)) {}

uint64_t next_sequence_nr() { return next_sequence_nr_counter.load(std::memory_order_relaxed); }

bool any_requires_grad(ArrayRef<Tensor> inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl& impl = t.impl();
  if (impl.grad_fn) return {impl.grad_fn, impl.output_nr};
  std::shared_ptr<Node> acc = impl.grad_accumulator.lock();
  if (!acc) {
    acc = make_pooled<AccumulateGrad>(t.impl_ptr());
    impl.grad_accumulator = acc;
  }
  return {acc, 0};
}

void set_history(ArrayRef<Tensor*> outputs, const std::shared_ptr<Node>& node,
                 ArrayRef<Tensor> inputs) {
  node->next_edges_.clear();
  for (const Tensor& t : inputs) node->next_edges_.push_back(gradient_edge(t));
  node->output_shapes_.clear();
  node->output_devices_.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorImpl& impl = outputs[i]->impl();
    impl.requires_grad = true;
    impl.grad_fn = node;
    impl.output_nr = static_cast<int>(i);
    node->output_shapes_.push_back(impl.shape);
    node->output_devices_.push_back(outputs[i]->device());
  }
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  defined_ = true;
  requires_grad_ = t.requires_grad();
  output_nr_ = t.output_nr();
  version_ = t.storage()->version();
  data_ = is_output ? t.detach() : t;
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner) const {
  if (!defined_) return {};
  GANTRY_CHECK(!released_, "autograd: the saved tensors of ", owner->name(),
               " were already freed by an earlier backward; pass retain_graph=true to the "
               "first backward to run it twice");
  GANTRY_CHECK(data_.storage()->version() == version_, "autograd: a tensor saved by ",
               owner->name(), " was modified in place after it was saved (version ", version_,
               " expected, found ", data_.storage()->version(), ")");
  if (!is_output_) return data_;
  auto impl = make_pooled<TensorImpl>(data_.impl());
  impl->grad = nullptr;
  impl->grad_accumulator.reset();
  if (requires_grad_) {
    impl->requires_grad = true;
    impl->grad_fn = owner;
    impl->output_nr = output_nr_;
  }
  return Tensor(std::move(impl));
}

void SavedTensor::release() {
  if (!defined_) return;
  released_ = true;
  data_ = Tensor();
}

}  // namespace gantry::autograd
