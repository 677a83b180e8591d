#include "core/ops/in_place.h"

#include "core/autograd/grad_mode.h"
#include "core/ops/op_support.h"

namespace gantry::ops {

namespace {

void check_writable(const char* op, const Tensor& self) {
  GANTRY_CHECK(self.defined(), op, ": expected a defined tensor to write into");
  GANTRY_CHECK(!(autograd::GradMode::enabled() && self.requires_grad()), op, ": cannot write in place into a "
               "tensor that requires grad while autograd records (use NoGradGuard), found ", self.str());
}

void check_same(const char* op, const Tensor& self, const Tensor& other) {
  detail::check_f32_same_device(op, {&self, &other});
  GANTRY_CHECK(self.shape() == other.shape(), op, ": expected shape ", self.shape().str(), ", found ",
               other.shape().str());
}

}  // namespace

void copy_(const Tensor& self, const Tensor& src) {
  check_writable("copy_", self);
  GANTRY_CHECK(self.shape() == src.shape(), "copy_: expected shape ", self.shape().str(), ", found ",
               src.shape().str());
  const Tensor value = src.dtype() == self.dtype() ? src : src.to(DType::F32).to(self.dtype());
  Backend& backend = detail::backend_of(self);
  if (value.device() == self.device()) {
    backend.copy(value.view(), self.view());
  } else if (value.device().is_cpu()) {
    backend.copy_from_host(value.raw_data(), self.view());
  } else {
    const Tensor host = value.to(Device::cpu());
    backend.copy_from_host(host.raw_data(), self.view());
  }
  self.bump_version();
}

void fill_(const Tensor& self, double value) {
  check_writable("fill_", self);
  detail::backend_of(self).fill(self.view(), value);
  self.bump_version();
}

void mul_(const Tensor& self, float factor) {
  check_writable("mul_", self);
  detail::check_f32_same_device("mul_", {&self});
  detail::backend_of(self).unary(UnaryFn{UnaryOp::MulScalar, factor, 0.f}, self.view(), self.view());
  self.bump_version();
}

void add_(const Tensor& self, const Tensor& other) {
  check_writable("add_", self);
  check_same("add_", self, other);
  detail::backend_of(self).binary(BinaryFn{BinaryOp::Add}, self.view(), other.view(), self.view());
  self.bump_version();
}

void lerp_(const Tensor& self, const Tensor& end, double weight) {
  check_writable("lerp_", self);
  check_same("lerp_", self, end);
  const LerpFn fn{static_cast<float>(weight), static_cast<float>(1.0 - weight)};
  detail::backend_of(self).lerp(fn, self.view(), end.view(), self.view());
  self.bump_version();
}

}  // namespace gantry::ops
