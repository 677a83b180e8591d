#include "core/tensor.h"

#include <cstring>

#include "backend/backend.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/pool_allocator.h"

namespace gantry {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto impl = make_pooled<TensorImpl>();
  impl->storage = make_pooled<Storage>(shape.numel() * dtype_size(dtype), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

void* Tensor::raw_data() const {
  const TensorImpl& i = impl();
  return static_cast<char*>(i.storage->data()) + i.offset * dtype_size(i.dtype);
}

View Tensor::native_view(bool accepts_bf16) const {
  const TensorImpl& i = impl();
  const Storage& s = *i.storage;
  // A buffer blocked by another block size than the backend's now (only a test forcing the size
  // can make one) is read plain.
  if (s.blocked() && i.offset == 0 && i.shape.rank() == 4 && i.shape[0] == s.blocked_images() &&
      i.shape[1] == s.blocked_channels() && i.shape[2] * i.shape[3] == s.blocked_pixels() &&
      s.channel_block() == backend_for(device()).channel_block()) {
    if (s.blocked_bf16() && accepts_bf16)
      return {s.native_data(), i.shape, i.dtype, device(), Layout::ChannelBlockedBf16};
    s.widen_to_f32();
    return {s.native_data(), i.shape, i.dtype, device(), Layout::ChannelBlocked};
  }
  return view();
}

void Tensor::set_layout(Layout layout) const {
  if (layout == Layout::Plain) return;
  const TensorImpl& i = impl();
  GANTRY_CHECK(i.offset == 0 && i.shape.rank() == 4 && i.dtype == DType::F32,
               "tensor: internal error, only a whole 4-D f32 tensor can be blocked, found ", str());
  i.storage->set_blocked(i.shape[0], i.shape[1], i.shape[2] * i.shape[3],
                         backend_for(device()).channel_block(), layout == Layout::ChannelBlockedBf16);
}

template <typename T>
T* Tensor::data() const {
  GANTRY_CHECK(device().is_cpu(), "tensor: data() needs a CPU tensor, found ", device().str());
  GANTRY_CHECK(dtype() == dtype_of<T>(), "tensor: data() expected dtype ", to_string(dtype_of<T>()),
               ", found ", to_string(dtype()));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data<float>() const;
template int64_t* Tensor::data<int64_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  backend_for(device()).copy(view(), out.view());
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return detach();
  Tensor out = empty(shape(), dtype(), target);
  if (device().is_cpu()) {
    backend_for(target).copy_from_host(raw_data(), out.view());
  } else if (target.is_cpu()) {
    backend_for(device()).copy_to_host(view(), out.raw_data());
  } else {  // device to device through the host (peer copies come with the CUDA backend)
    std::vector<char> host(nbytes());
    backend_for(device()).copy_to_host(view(), host.data());
    backend_for(target).copy_from_host(host.data(), out.view());
  }
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return detach();
  Tensor out = empty(shape(), target, device());
  backend_for(device()).cast(view(), out.view());
  return out;
}

std::vector<float> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).to(DType::F32);
  const float* p = host.data<float>();
  return {p, p + numel()};
}

float Tensor::item() const {
  GANTRY_CHECK(numel() == 1, "item: expected a tensor with one element, found shape ",
               shape().str());
  Tensor host = to(Device::cpu()).to(DType::F32);  // no copy for an f32 CPU tensor
  return host.data<float>()[0];
}

Tensor Tensor::detach() const {
  auto impl = make_pooled<TensorImpl>();
  impl->storage = this->impl().storage;
  impl->offset = this->impl().offset;
  impl->shape = shape();
  impl->dtype = dtype();
  return Tensor(std::move(impl));
}

Tensor& Tensor::set_requires_grad(bool value) {
  GANTRY_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can be marked; this one has "
               "history (detach() it first)");
  GANTRY_CHECK(!value || dtype() == DType::F32, "set_requires_grad: only f32 tensors can "
               "require grad, found ", to_string(dtype()));
  impl().requires_grad = value;
  return *this;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  if (gradient.defined())
    autograd::backward({*this}, {gradient}, retain_graph, create_graph);
  else
    autograd::backward({*this}, {}, retain_graph, create_graph);
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return "Tensor(" + to_string(dtype()) + ", " + device().str() + ", " + shape().str() + ")";
}

}  // namespace gantry
