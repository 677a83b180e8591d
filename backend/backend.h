// The backend interface: one implementation per device kind, chosen at run time by a tensor's
// device (backend_for). Kernels write into outputs the caller allocated; they validate nothing
// that core/ops already checked (shapes, dtypes, devices), so every contract in the op table
// (backend/backend_ops.def) is a precondition.
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

// What the softmax operations compute over each row: softmax, or its logarithm (log-softmax).
enum class SoftmaxKind : uint8_t { Softmax, LogSoftmax };

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

  // ---- the operations, one line each in the table (Note [backend op table])
#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) virtual ReturnType name parameters = 0;
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
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
