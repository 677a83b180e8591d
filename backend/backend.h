// The backend interface: one implementation per device kind, chosen at run time by a tensor's
// device (backend_for). Kernels write into outputs the caller allocated; they validate nothing
// that core/ops already checked (shapes, dtypes, devices), so every contract below is a
// precondition.
#pragma once

#include <cstddef>
#include <string>

#include "backend/conv_math.h"
#include "backend/functors.h"
#include "backend/grid_sample_math.h"
#include "backend/optimizer_math.h"
#include "backend/view.h"
#include "base/philox.h"

namespace gantry {

// 2-D convolution geometry. Note [second derivatives of convolution] in core/ops/convolution.cpp:
// forward, backward-data and backward-weights are the three primitives every conv-like op uses.
struct ConvParams {
  int stride[2] = {1, 1};
  int padding[2] = {0, 0};
  int dilation[2] = {1, 1};  // PyTorch convention: 1 = dense
  // Input and output channels split into `groups` independent convolutions, as torch's conv2d:
  // the weight is (O, I / groups, kh, kw), output channel o reading input group o / (O / groups).
  int groups = 1;
};

enum class PoolKind : uint8_t { Max, Avg };

struct PoolParams {
  PoolKind kind = PoolKind::Max;
  int kernel[2] = {2, 2};
  int stride[2] = {2, 2};
  int padding[2] = {0, 0};
  bool count_include_pad = true;  // avg pooling only; PyTorch's default
};

enum class Distribution : uint8_t { Uniform, Normal };

// upfirdn2d geometry, StyleGAN2's semantics (Note [upfirdn2d] in core/ops/upfirdn2d.cpp): each
// (N, C) plane is upsampled by inserting up - 1 zeros after every pixel, padded (a negative pad
// crops) in the upsampled grid, convolved with the filter f (kh, kw) — true convolution unless
// flip_filter, i.e. correlation with the flipped filter — scaled by gain, and every down-th
// pixel kept. Index [0] is y (rows), [1] is x (columns).
struct UpFirDnParams {
  int up[2] = {1, 1};
  int down[2] = {1, 1};
  int pad0[2] = {0, 0};  // before the first row / column
  int pad1[2] = {0, 0};  // after the last row / column
  bool flip_filter = false;
  float gain = 1.0f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;
  virtual int device_count() const = 0;
  // Human-readable report of this backend's devices and libraries (gan_devices prints it).
  virtual std::string describe() const = 0;
  // Why this backend cannot run convolutions and matmuls with `math` operands, or "" when it can
  // (backend/conv_math.h).
  virtual std::string conv_math_unavailable(ConvMath math) const = 0;
  // Channels per block of this backend's Layout::ChannelBlocked (backend/view.h), one value per
  // process; 0 when the backend never writes blocked activations.
  virtual int channel_block() const = 0;

  // ---- timing and memory
  // Waits until the work queued on `device` has finished (benchmark clocks read after it). The
  // CPU's ops finish before they return: a no-op there.
  virtual void synchronize(Device device) = 0;
  // The most bytes the device's allocator has held for tensors since the process started (the
  // caching allocator's peak, as torch.cuda.max_memory_allocated); 0 where nothing tracks it (the
  // CPU: see the process's peak RSS instead).
  virtual size_t peak_allocated_bytes(Device device) = 0;
  virtual void* allocate(size_t bytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t bytes, Device device) = 0;
  virtual void copy_from_host(const void* src, const View& dst) = 0;
  virtual void copy_to_host(const View& src, void* dst) = 0;
  // Same device; src and dst have the same dtype and numel.
  virtual void copy(const View& src, const View& dst) = 0;
  // Elementwise conversion between dtypes of equal numel (u8/i64/f16/bf16 <-> f32).
  virtual void cast(const View& src, const View& dst) = 0;
  virtual void fill(const View& out, double value) = 0;
  // Element i of `out` = stream element (offset + i); Uniform in (a, b], Normal with mean a, std b.
  virtual void random(const View& out, Distribution dist, RngKey key, uint64_t offset, float a,
                      float b) = 0;

  // ---- layout: copies src into dst element by element (same shape, any strides). Permute,
  // expand, slice, concat and pad are all this copy with different strides.
  virtual void strided_copy(const StridedView& src, const StridedView& dst) = 0;

  // ---- elementwise (f32). Binary and where broadcast their inputs to the output's shape.
  virtual void unary(UnaryFn fn, const View& x, const View& y) = 0;
  virtual void binary(BinaryFn fn, const View& a, const View& b, const View& y) = 0;
  virtual void where(const View& cond, const View& a, const View& b, const View& y) = 0;
  // y = fn(start, end) element by element, all of one shape; y may alias start or end.
  virtual void lerp(LerpFn fn, const View& start, const View& end, const View& y) = 0;
  // y has x's rank with the reduced axes (bits of axes_mask) of size 1. x may be ChannelBlocked.
  virtual void reduce(ReduceFn fn, const View& x, uint32_t axes_mask, const View& y) = 0;

  // ---- indexing. index is i64; out-of-range indices are the caller's error (checked in ops).
  virtual void index_select(const View& x, int dim, const View& index, const View& y) = 0;
  // y (already initialised) += src scattered along `dim` at `index`.
  virtual void index_add(const View& src, int dim, const View& index, const View& y) = 0;

  // ---- dense ops (f32, NCHW). Weights in PyTorch layout: conv [O, I / groups, kh, kw].
  // Convolutions accept activations in any layout the backend writes (Note [blocked
  // activations] in core/storage.h); an activation output whose view says ChannelBlocked may be
  // written blocked. They return the layout they wrote the output in.
  virtual Layout conv2d_forward(const View& x, const View& w, const View* bias,
                                const ConvParams& p, const View& y) = 0;
  virtual Layout conv2d_backward_data(const View& gy, const View& w, const ConvParams& p,
                                      const View& gx) = 0;
  virtual Layout conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                         const View& gw) = 0;
  // y (M, N) = op(a) op(b) [+ bias (N)], op = transpose when the flag is set. 2-D only.
  virtual void matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
                      const View& y) = 0;
  // Batch statistics over (N, H, W) per channel; var is the biased variance. gamma/beta may be
  // null (affine = false). y = act(normalised x) (Note [batch norm + activation]).
  virtual void batch_norm_forward_training(const View& x, const View* gamma, const View* beta,
                                           float eps, const BatchNormActivation& act,
                                           const View& y, const View& mean, const View& var) = 0;
  virtual void batch_norm_forward_inference(const View& x, const View* gamma, const View* beta,
                                            const View& mean, const View& var, float eps,
                                            const View& y) = 0;
  // ggamma/gbeta may be null when not wanted (or gamma null). With an activation, gy is the
  // gradient of its output y (the forward's output, needed then) and is multiplied by its
  // derivative first.
  virtual void batch_norm_backward(const View& x, const View& gy, const View& mean,
                                   const View& var, const View* gamma, float eps,
                                   const BatchNormActivation& act, const View* y, const View& gx,
                                   const View* ggamma, const View* gbeta) = 0;
  // Max pooling records its argmax in `workspace` (size from pool_workspace_bytes; u8).
  virtual size_t pool_workspace_bytes(const PoolParams& p, const View& x, const View& y) = 0;
  virtual void pool2d_forward(const PoolParams& p, const View& x, const View& y,
                              const View* workspace) = 0;
  virtual void pool2d_backward(const PoolParams& p, const View& gy, const View* workspace,
                               const View& gx) = 0;
  // Bilinear resize (N, C, H, W) -> y's (N, C, Ho, Wo), PyTorch's align_corners=False, and its
  // adjoint: gx (N, C, H, W) = the transpose of that map applied to gy (overwritten, not added).
  virtual void resize_bilinear_forward(const View& x, const View& y) = 0;
  virtual void resize_bilinear_backward(const View& gy, const View& gx) = 0;
  // Per-example integer translation with zero fill (differentiable augmentation):
  // y[n, c, h, w] = x[n, c, h - sign * shift[n, 0], w - sign * shift[n, 1]], 0 where that lies
  // outside x. x, y f32 (N, C, H, W); shift i64 (N, 2) on the same device; sign +1 or -1 (the
  // adjoint: translating back by the same shift).
  virtual void translate2d(const View& x, const View& shift, int sign, const View& y) = 0;
  // y (N, C, Ho, Wo) = upfirdn2d of x (N, C, H, W) with the filter f (kh, kw), same device; the
  // caller sized y: Ho = (H * up + pad0 + pad1 - kh) / down + 1 (and likewise Wo), Ho, Wo >= 1.
  // x may be ChannelBlocked and y may be written so, as the convolutions do; returns y's layout.
  virtual Layout upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) = 0;
  // Bilinear grid sampling, torch.nn.functional.grid_sample(align_corners=False) with zeros or
  // reflection padding (backend/grid_sample_math.h): x (N, C, H, W), grid (N, Ho, Wo, 2) holding
  // (x, y) in [-1, 1], y (N, C, Ho, Wo). The adjoint scatters gy (N, C, Ho, Wo) back into gx
  // (N, C, H, W) (overwritten, not added); the grid gradient ggrid (N, Ho, Wo, 2) is
  // d sum(gy * grid_sample(x, grid)) / d grid (overwritten).
  virtual void grid_sample(const View& x, const View& grid, GridPadding padding, const View& y) = 0;
  virtual void grid_sample_adjoint(const View& gy, const View& grid, GridPadding padding, const View& gx) = 0;
  virtual void grid_sample_grid_grad(const View& x, const View& grid, const View& gy, GridPadding padding,
                                     const View& ggrid) = 0;

  // ---- optimizer updates of one parameter, in place (backend/optimizer_math.h): every view is
  // f32 with the parameter's element count; optional state is null where the math does not
  // touch it (max_exp_avg_sq without amsgrad, grad_avg without centered, momentum buffers
  // without momentum). One fused pass, on the device that holds the parameter.
  virtual void adam_update(const AdamMath& math, const View& param, const View& grad, const View& exp_avg,
                           const View& exp_avg_sq, const View* max_exp_avg_sq) = 0;
  virtual void rmsprop_update(const RmsPropMath& math, const View& param, const View& grad,
                              const View& square_avg, const View* grad_avg, const View* momentum_buffer) = 0;
  virtual void sgd_update(const SgdMath& math, const View& param, const View& grad,
                          const View* momentum_buffer) = 0;
};

// The backend for a device kind; throws a clear error when it was not built or has no device.
Backend& backend_for(Device device);
bool backend_available(DeviceKind kind);
// Every backend this build has, described; says plainly when CUDA is absent or has no device.
std::string describe_backends();
// Why the CUDA module (loaded) sees no device: CUDA's error if its query failed, and an ERROR
// when the machine has NVIDIA GPUs all the same (Note [no device on a GPU machine]).
std::string no_cuda_device_reason();
// True where the CUDA module loads, sees no device, and the machine has NVIDIA GPUs: a broken
// setup that apps and GPU tests must report as a failure, never skip.
bool cuda_device_missing_on_gpu_machine();

}  // namespace gantry
