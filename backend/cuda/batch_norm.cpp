// Batch norm of the CUDA backend from our own launchers (per-channel reductions in double,
// broadcasting elementwise kernels) instead of cuDNN's batch-norm calls, which cuDNN 9 deprecates.
// Statistics are two-pass (mean, then the mean of squared deviations), accumulated in double.
//
// x (N, C) or (N, C, H, W) is viewed as (N, C, S) with S = H * W; per-channel values broadcast as
// (1, C, 1) and are reduced over axes 0 and 2 (count = N * S values per channel).
#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

struct BnGeometry {
  int64_t n = 0, c = 0, s = 1;
  Shape x3() const { return Shape{n, c, s}; }
  Shape channel3() const { return Shape{1, c, 1}; }
  int64_t count() const { return n * s; }
  int64_t numel() const { return n * c * s; }
};

BnGeometry bn_geometry(const Shape& x, const char* op) {
  GANTRY_CHECK(x.rank() == 2 || x.rank() == 4, "cuda ", op,
               ": expected input (N, C) or (N, C, H, W), found ", x.str());
  return {x[0], x[1], x.rank() == 4 ? x[2] * x[3] : 1};
}

// The building blocks, all queued on the device's compute stream.
class BnKernels {
 public:
  BnKernels(DeviceContext& ctx, const BnGeometry& g) : ctx_(ctx), g_(g) {}

  Scratch channel_buffer() { return Scratch(ctx_, static_cast<size_t>(g_.c) * sizeof(float)); }
  Scratch full_buffer() { return Scratch(ctx_, static_cast<size_t>(g_.numel()) * sizeof(float)); }

  // out (C) = sum over (N, S) of x (N, C, S)
  void channel_sum(const float* x, float* out) {
    ReducePlan plan = make_reduce_plan(g_.x3(), 0b101);
    Scratch workspace(ctx_, reduce_workspace_bytes(plan));
    launch_reduce(ReduceFn{ReduceOp::Sum}, x, out, plan, workspace.get(), ctx_.stream());
  }
  // y (N, C, S) = a (N, C, S) op per-channel b (C)
  void with_channel(BinaryOp op, const float* a, const float* b, float* y) {
    OffsetCalc<2> calc = make_offset_calc(g_.x3(), g_.x3(), g_.channel3());
    launch_binary(BinaryFn{op}, a, b, y, g_.numel(), &calc, ctx_.stream());
  }
  // y = a op b, elementwise over n values of equal shape
  void same_shape(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
    launch_binary(BinaryFn{op}, a, b, y, n, nullptr, ctx_.stream());
  }
  void unary(UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
    launch_unary(UnaryFn{op, alpha, 0.f}, x, y, n, ctx_.stream());
  }
  // inv_std (C) = 1 / sqrt(var + eps)
  void inverse_std(const float* var, float eps, float* inv_std) {
    unary(UnaryOp::AddScalar, eps, var, inv_std, g_.c);
    unary(UnaryOp::Rsqrt, 0.f, inv_std, inv_std, g_.c);
  }
  // xhat (N, C, S) = (x - mean) * inv_std
  void normalize(const float* x, const float* mean, const float* inv_std, float* xhat) {
    with_channel(BinaryOp::Sub, x, mean, xhat);
    with_channel(BinaryOp::Mul, xhat, inv_std, xhat);
  }
  // y = act(y) in place (Note [batch norm + activation]): the Relu / LeakyRelu functors
  void activate(const BatchNormActivation& act, float* y) {
    if (act.kind == BatchNormActivation::Kind::Relu) unary(UnaryOp::Relu, 0.f, y, y, g_.numel());
    if (act.kind == BatchNormActivation::Kind::LeakyRelu)
      unary(UnaryOp::LeakyRelu, act.negative_slope, y, y, g_.numel());
  }
  // out = gy * act'(y), the derivative read off the output: the masks of the unfused backward
  void times_derivative(const BatchNormActivation& act, const float* gy, const float* y, float* out) {
    if (act.kind == BatchNormActivation::Kind::Relu) unary(UnaryOp::GtScalar, 0.f, y, out, g_.numel());
    if (act.kind == BatchNormActivation::Kind::LeakyRelu)
      unary(UnaryOp::LeakyReluSlope, act.negative_slope, y, out, g_.numel());
    same_shape(BinaryOp::Mul, gy, out, out, g_.numel());
  }
  // y = y * gamma + beta (either may be null: affine = false)
  void affine(const float* gamma, const float* beta, float* y) {
    if (gamma) with_channel(BinaryOp::Mul, y, gamma, y);
    if (beta) with_channel(BinaryOp::Add, y, beta, y);
  }

 private:
  DeviceContext& ctx_;
  BnGeometry g_;
};

const float* data_or_null(const View* v) { return v ? v->as<float>() : nullptr; }

}  // namespace

void CudaBackend::batch_norm_forward_training(const View& x, const View* gamma,
                                              const View* beta, float eps,
                                              const BatchNormActivation& act, const View& y,
                                              const View& mean, const View& var) {
  const BnGeometry g = bn_geometry(x.shape, "batch_norm");
  GANTRY_CHECK(g.count() > 1, "cuda batch_norm: expected more than 1 value per channel when "
               "training, found input shape ", x.shape.str());
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  BnKernels k(ctx, g);
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(g.count()));
  // mean = sum(x) / count; var = sum((x - mean)^2) / count (biased)
  k.channel_sum(x.as<float>(), mean.as<float>());
  k.unary(UnaryOp::MulScalar, inv_count, mean.as<float>(), mean.as<float>(), g.c);
  Scratch squares = k.full_buffer();
  k.with_channel(BinaryOp::Sub, x.as<float>(), mean.as<float>(), squares.as<float>());
  k.unary(UnaryOp::Square, 0.f, squares.as<float>(), squares.as<float>(), g.numel());
  k.channel_sum(squares.as<float>(), var.as<float>());
  k.unary(UnaryOp::MulScalar, inv_count, var.as<float>(), var.as<float>(), g.c);
  // y = (x - mean) / sqrt(var + eps) * gamma + beta
  Scratch inv_std = k.channel_buffer();
  k.inverse_std(var.as<float>(), eps, inv_std.as<float>());
  k.normalize(x.as<float>(), mean.as<float>(), inv_std.as<float>(), y.as<float>());
  k.affine(data_or_null(gamma), data_or_null(beta), y.as<float>());
  k.activate(act, y.as<float>());
}

void CudaBackend::batch_norm_forward_inference(const View& x, const View* gamma,
                                               const View* beta, const View& mean,
                                               const View& var, float eps, const View& y) {
  if (x.numel() == 0) return;
  const BnGeometry g = bn_geometry(x.shape, "batch_norm");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  BnKernels k(ctx, g);
  Scratch inv_std = k.channel_buffer();
  k.inverse_std(var.as<float>(), eps, inv_std.as<float>());
  k.normalize(x.as<float>(), mean.as<float>(), inv_std.as<float>(), y.as<float>());
  k.affine(data_or_null(gamma), data_or_null(beta), y.as<float>());
}

// With xhat = (x - mean) * inv_std over the batch statistics:
//   gbeta = sum(gy), ggamma = sum(gy * xhat) (per channel, over N and S)
//   gx = gamma * inv_std * (gy - gbeta / count - xhat * ggamma / count)
void CudaBackend::batch_norm_backward(const View& x, const View& gy_out, const View& mean,
                                      const View& var, const View* gamma, float eps,
                                      const BatchNormActivation& act, const View* y,
                                      const View& gx, const View* ggamma, const View* gbeta) {
  if (x.numel() == 0) return;
  const BnGeometry g = bn_geometry(x.shape, "batch_norm");
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  BnKernels k(ctx, g);
  // With an activation, the gradient of the normalised values first (Note [batch norm +
  // activation]).
  Scratch activation_grad = act.enabled() ? k.full_buffer() : Scratch(ctx, 0);
  View gy = gy_out;
  if (act.enabled()) {
    GANTRY_CHECK(y != nullptr, "cuda batch_norm_backward: internal error, a fused activation "
                 "needs the forward's output");
    k.times_derivative(act, gy_out.as<float>(), y->as<float>(), activation_grad.as<float>());
    gy.data = activation_grad.get();
  }
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(g.count()));
  Scratch inv_std = k.channel_buffer(), xhat = k.full_buffer(), product = k.full_buffer();
  k.inverse_std(var.as<float>(), eps, inv_std.as<float>());
  k.normalize(x.as<float>(), mean.as<float>(), inv_std.as<float>(), xhat.as<float>());

  Scratch beta_sum = k.channel_buffer(), gamma_sum = k.channel_buffer();
  float* sum_gy = gbeta ? gbeta->as<float>() : beta_sum.as<float>();
  float* sum_gy_xhat = ggamma ? ggamma->as<float>() : gamma_sum.as<float>();
  k.channel_sum(gy.as<float>(), sum_gy);
  k.same_shape(BinaryOp::Mul, gy.as<float>(), xhat.as<float>(), product.as<float>(), g.numel());
  k.channel_sum(product.as<float>(), sum_gy_xhat);

  // Per-channel coefficients: mean_gy = gbeta / count, mean_gy_xhat = ggamma / count and
  // scale = gamma * inv_std.
  Scratch mean_gy = k.channel_buffer(), mean_gy_xhat = k.channel_buffer();
  k.unary(UnaryOp::MulScalar, inv_count, sum_gy, mean_gy.as<float>(), g.c);
  k.unary(UnaryOp::MulScalar, inv_count, sum_gy_xhat, mean_gy_xhat.as<float>(), g.c);
  float* scale = inv_std.as<float>();
  if (gamma) k.same_shape(BinaryOp::Mul, gamma->as<float>(), scale, scale, g.c);

  float* out = gx.as<float>();
  k.with_channel(BinaryOp::Mul, xhat.as<float>(), mean_gy_xhat.as<float>(), product.as<float>());
  k.same_shape(BinaryOp::Sub, gy.as<float>(), product.as<float>(), out, g.numel());
  k.with_channel(BinaryOp::Sub, out, mean_gy.as<float>(), out);
  k.with_channel(BinaryOp::Mul, out, scale, out);
}

}  // namespace gantry::cuda
