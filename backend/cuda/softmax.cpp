// CudaBackend's softmax and log-softmax over the last dimension: the rows on the host, the
// kernels in softmax.cu.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

int64_t last_dim(const Shape& shape) {
  GANTRY_CHECK(shape.rank() >= 1 && shape[shape.rank() - 1] >= 1,
               "cuda softmax: expected a last dimension of at least 1, found ", shape.str());
  return shape[shape.rank() - 1];
}

}  // namespace

void CudaBackend::softmax(const View& x, SoftmaxKind kind, const View& y) {
  const int64_t cols = last_dim(x.shape);
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_softmax(x.as<float>(), y.as<float>(), x.numel() / cols, cols, kind == SoftmaxKind::LogSoftmax, ctx.stream());
}

void CudaBackend::softmax_backward(const View& y, const View& gy, SoftmaxKind kind, const View& gx) {
  const int64_t cols = last_dim(y.shape);
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  launch_softmax_backward(y.as<float>(), gy.as<float>(), gx.as<float>(), y.numel() / cols, cols,
                          kind == SoftmaxKind::LogSoftmax, ctx.stream());
}

}  // namespace gantry::cuda
