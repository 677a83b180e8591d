// Tensor: a reference-counted handle to (storage, offset, shape, dtype) plus autograd metadata.
// Copying a Tensor copies the handle; clone() copies the data. Data is contiguous row-major.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/view.h"
#include "base/device.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/shape.h"
#include "core/storage.h"

namespace gantry {

namespace autograd {
class Node;
}

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  DType dtype = DType::F32;

  // autograd
  bool requires_grad = false;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  int output_nr = 0;                        // which output of grad_fn this is
  std::shared_ptr<TensorImpl> grad;         // accumulated gradient of a leaf
  std::weak_ptr<autograd::Node> grad_accumulator;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialised contiguous tensor.
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int dim() const { return impl().shape.rank(); }
  int64_t size(int d) const { return impl().shape.size(d); }
  int64_t numel() const { return impl().shape.numel(); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  void* raw_data() const;
  // Host pointer to the elements; throws unless the tensor is on a CPU device with dtype T.
  template <typename T> T* data() const;
  View view() const { return {raw_data(), shape(), dtype(), device()}; }
  // The view as stored: ChannelBlocked when this tensor is a whole blocked buffer, else view()
  // (Note [blocked activations] in core/storage.h). Only for ops that accept both layouts. A
  // bf16 buffer (Note [bf16 activations]) is ChannelBlockedBf16 when `accepts_bf16`, else it is
  // widened to f32 in place first.
  View native_view(bool accepts_bf16 = false) const;
  // Records that an op wrote this fresh (N, C, H, W) tensor in `layout`.
  void set_layout(Layout layout) const;
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }

  // Copies
  Tensor clone() const;               // same device, new storage, no history
  Tensor to(Device device) const;     // copy unless already there (keeps no history)
  Tensor to(DType dtype) const;       // conversion (keeps no history)
  std::vector<float> to_vector() const;  // f32 values on the host
  float item() const;                 // the single value of a 1-element tensor

  // Views sharing storage (contiguous, so any reshape is a view).
  Tensor detach() const;              // same data, no history, requires_grad false

  // Autograd
  bool requires_grad() const { return impl().requires_grad; }
  // Only leaves can be marked; returns *this for chaining.
  Tensor& set_requires_grad(bool value);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  int output_nr() const { return impl().output_nr; }
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g) const { impl().grad = g.impl_; }
  // Accumulates d(this)/d(leaves) into the leaves' grad(). `gradient` defaults to 1 for a
  // scalar. The graph's saved tensors are freed afterwards unless retain_graph.
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;

  // Marks an in-place write (optimizer updates) so stale saved tensors are detected.
  void bump_version() const { impl().storage->bump_version(); }
  uint64_t version() const { return impl().storage->version(); }  // bumped by every in-place write

  std::string str() const;  // "Tensor(f32, cpu:0, (2, 3))"
  TensorImpl& impl() const {
    GANTRY_CHECK(impl_ != nullptr, "tensor: used an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace gantry
