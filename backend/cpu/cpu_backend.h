// The CPU backend: oneDNN primitives for the dense ops (conv, matmul, batch norm, pooling),
// OpenMP loops over the shared functors for elementwise math and reductions. All CPU devices
// (cpu:0, cpu:1, ...) share host memory; the index only tells replicas apart.
//
// Where the operations (backend/backend_ops.def) live: memory, layout, elementwise, indexing and
// the optimizer updates in cpu_backend.cpp; convolution, matmul, batch norm, pooling and resize
// on oneDNN in onednn_*.cpp (training batch norm on NCHW in batch_norm_nchw.cpp); translate2d
// (row copies with zero fill) in translate.cpp; upfirdn2d (oneDNN depthwise convolutions on
// blocked activations, else vectorised loops) in upfirdn2d.cpp; grid sampling in grid_sample.cpp;
// softmax and log-softmax on oneDNN in onednn_softmax.cpp.
#pragma once

#include "backend/backend.h"

namespace gantry::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::CPU; }
  std::string name() const override { return "cpu"; }
  int device_count() const override;
  std::string describe() const override;
  std::string conv_math_unavailable(ConvMath math) const override;
  void synchronize(Device) override {}
  size_t peak_allocated_bytes(Device) override { return 0; }
  int channel_block() const override;  // onednn_context.cpp's channel_block()

#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) ReturnType name parameters override;
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

// Applies this thread's budget (base/threads.h) to OpenMP before a parallel region.
void apply_thread_budget();

}  // namespace gantry::cpu
