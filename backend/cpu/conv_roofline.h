// Note [conv roofline]: what the step's convolutions would cost as raw oneDNN primitives. With
// recording on, the CPU backend notes every convolution it runs (direction, shapes, params,
// thread budget); conv_roofline_seconds() then times each distinct one as a bare primitive on
// data already in the primitive's layout (no reorders, no Gantry code around it), the way
// bench/ops/conv_bench.cpp's raw_blocked case does, and takes the faster of oneDNN's blocked
// (format_tag::any) and plain (nchw) primitive. The step's convolution FLOPs over that time is
// the roofline GFLOP/s a framework on these primitives could reach; gan_bench reports the step's
// achieved GFLOP/s against it.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "base/shape.h"

namespace gantry::cpu {

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

// Recording is off by default (one relaxed atomic load per convolution when off).
void set_conv_recording(bool on);
void clear_recorded_convs();
std::vector<RecordedConv> recorded_convs();
// Called by the convolution entry points.
void record_conv(ConvDirection direction, const Shape& src, const Shape& weights,
                 const Shape& dst, const ConvParams& params);

// Seconds per call of the fastest raw primitive for `call` at its thread budget, timed for at
// least `min_seconds` per layout (best of five rounds, to shed interference from other
// processes: an estimate of the uncontended speed).
double raw_conv_seconds(const ConvCall& call, double min_seconds = 0.1);

}  // namespace gantry::cpu
