// The convolution roofline: what a step's convolutions would cost as the backend's bare
// primitives.
//
// Note [conv roofline]: while a ConvRecorder is alive it stands in front of a device kind's
// backend (a backend layer, Note [backend layers]) and notes every convolution run through it
// (direction, shapes, params, thread budget); the convolution kernels themselves know nothing of
// it. raw_conv_seconds() then times each distinct one as a bare primitive on data already in the
// primitive's layout (no reorders, no Gantry code around it): on the CPU the faster of oneDNN's
// blocked (format_tag::any) and plain (nchw) primitive, the way bench/ops/conv_bench.cpp's
// raw_blocked case does (backend/cpu/onednn_conv_timing.h). The step's convolution FLOPs over
// that time is the roofline GFLOP/s a framework on these primitives could reach; gan_bench
// reports the step's achieved GFLOP/s against it.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "backend/backend_layer.h"
#include "base/shape.h"

namespace gantry {

enum class ConvDirection : uint8_t { Forward, BackwardData, BackwardWeights };

// One convolution as the conv it runs: src (N, I, H, W), weights (O, I, kh, kw), dst (N, O, Ho, Wo).
struct ConvCall {
  ConvDirection direction = ConvDirection::Forward;
  Shape src, weights, dst;
  ConvParams params;
  int threads = 1;
  double flops() const;  // 2 * N * O * I * kh * kw * Ho * Wo
  bool operator==(const ConvCall& other) const;
};

struct RecordedConv {
  ConvCall call;
  int64_t count = 0;
};

// Records the convolutions every device of `kind` runs while it is alive, at the thread budget
// of the thread that runs each (Note [conv roofline]).
class ConvRecorder final : public ForwardingBackend {
 public:
  explicit ConvRecorder(DeviceKind kind);
  std::vector<RecordedConv> recorded() const;

  Layout conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                        const View& y) override;
  Layout conv2d_backward_data(const View& gy, const View& w, const ConvParams& p, const View& gx) override;
  Layout conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p, const View& gw) override;

 private:
  void record(ConvDirection direction, const Shape& src, const Shape& weights, const Shape& dst,
              const ConvParams& params);

  mutable std::mutex mutex_;
  std::vector<RecordedConv> calls_;
  ScopedBackendLayer layer_;  // last: installed once the recorder is complete, removed first
};

// Whether raw_conv_seconds can time the convolutions of `kind` (the CPU's; CUDA has no roofline).
bool has_conv_roofline(DeviceKind kind);
// Seconds per call of the fastest bare primitive for `call` at its thread budget, timed for at
// least `min_seconds` per layout (best of five rounds, to shed interference from other
// processes: an estimate of the uncontended speed).
double raw_conv_seconds(DeviceKind kind, const ConvCall& call, double min_seconds = 0.1);

}  // namespace gantry
