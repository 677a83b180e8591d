// Convolution throughput at the DCGAN-32 layer sizes (batch 64): each layer's forward,
// backward-data and backward-weights through CpuBackend on plain NCHW data (what Gantry's ops
// run), under each conv layout policy (Note [conv layout]; auto is the default), and the same computation as a raw
// oneDNN primitive on its preferred blocked layouts with inputs already reordered (the ceiling).
// Counter GFLOP/s = 2*N*O*I*kh*kw*Ho*Wo per call (Ho, Wo of the smaller side) / wall time.
// D1_conv_lrelu times the discriminator's first layer (the one conv -> LeakyReLU without batch norm
// between them) with the activation as Gantry's own pass after it, and fused as a oneDNN eltwise
// post-op: what that fusion alone would save.
//
//   gantry_op_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/threads.h"

namespace gantry {
namespace {

using dnnl::memory;

// A layer as the convolution it runs: x (N, I, H, W) -> y (N, O, Ho, Wo), weight (O, I, k, k).
// A transposed layer with weight [in, out, k, k] is the conv with O = in, I = out run
// backwards: its forward is that conv's backward-data and its backward-data the conv's forward.
struct Layer {
  const char* name;
  bool transposed;
  int64_t n, in_c, out_c, h, w, k;
  int stride, padding;

  int64_t ho() const { return (h + 2 * padding - k) / stride + 1; }
  int64_t wo() const { return (w + 2 * padding - k) / stride + 1; }
  Shape x() const { return {n, in_c, h, w}; }
  Shape weight() const { return {out_c, in_c, k, k}; }
  Shape y() const { return {n, out_c, ho(), wo()}; }
  double flops() const { return 2.0 * n * out_c * in_c * k * k * ho() * wo(); }
  ConvParams params() const {
    ConvParams p;
    p.stride[0] = p.stride[1] = stride;
    p.padding[0] = p.padding[1] = padding;
    return p;
  }
};

constexpr int64_t kBatch = 64;
const Layer kLayers[] = {
    {"G1_convT_100to256_1to4", true, kBatch, 256, 100, 4, 4, 4, 1, 0},
    {"G2_convT_256to128_4to8", true, kBatch, 128, 256, 8, 8, 4, 2, 1},
    {"G3_convT_128to64_8to16", true, kBatch, 64, 128, 16, 16, 4, 2, 1},
    {"G4_convT_64to1_16to32", true, kBatch, 1, 64, 32, 32, 4, 2, 1},
    {"D1_conv_1to64_32to16", false, kBatch, 1, 64, 32, 32, 4, 2, 1},
    {"D2_conv_64to128_16to8", false, kBatch, 64, 128, 16, 16, 4, 2, 1},
    {"D3_conv_128to256_8to4", false, kBatch, 128, 256, 8, 8, 4, 2, 1},
    {"D4_conv_256to1_4to1", false, kBatch, 256, 1, 4, 4, 4, 1, 0},
};

// A layer's forward convolution with every layout left to oneDNN (format_tag::any).
dnnl::convolution_forward::desc forward_desc(const Layer& l) {
  const memory::dims strides{l.stride, l.stride}, dil{0, 0}, pad{l.padding, l.padding};
  return {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
          cpu::any_desc(cpu::onednn_dims(l.x())), cpu::any_desc(cpu::onednn_dims(l.weight())),
          cpu::any_desc(cpu::onednn_dims(l.y())), strides, dil, pad, pad};
}

enum class ConvOp { Forward, BackwardData, BackwardWeights };

// The conv primitive behind a layer's direction (0 forward, 1 backward-data, 2 backward-weights).
ConvOp conv_op(const Layer& l, int direction) {
  if (direction == 2) return ConvOp::BackwardWeights;
  const bool forward = direction == 0;
  return forward != l.transposed ? ConvOp::Forward : ConvOp::BackwardData;
}

std::vector<float> random_data(const Shape& s) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(s.numel());
  for (float& f : v) f = dist(rng);
  return v;
}

View view_of(std::vector<float>& v, const Shape& s) {
  return View{v.data(), s, DType::F32, Device::cpu()};
}

void set_counters(benchmark::State& state, const Layer& l) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(l.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bench_gantry(benchmark::State& state, const Layer& l, int direction, cpu::ConvLayout layout,
                  int threads) {
  set_num_threads(threads);
  cpu::set_conv_layout(layout);
  cpu::CpuBackend backend;
  std::vector<float> x = random_data(l.x()), w = random_data(l.weight()), y = random_data(l.y());
  const View xv = view_of(x, l.x()), wv = view_of(w, l.weight()), yv = view_of(y, l.y());
  const ConvParams p = l.params();
  const ConvOp op = conv_op(l, direction);
  for (auto _ : state) {
    switch (op) {
      case ConvOp::Forward: backend.conv2d_forward(xv, wv, nullptr, p, yv); break;
      case ConvOp::BackwardData: backend.conv2d_backward_data(yv, wv, p, xv); break;
      case ConvOp::BackwardWeights: backend.conv2d_backward_weights(xv, yv, p, wv); break;
    }
    benchmark::ClobberMemory();
  }
  set_counters(state, l);
}

// The raw primitive on oneDNN's preferred layouts, with data already in them.
void bench_raw(benchmark::State& state, const Layer& l, int direction, int threads) {
  omp_set_num_threads(threads);
  const dnnl::engine& eng = cpu::onednn_engine();
  dnnl::stream stream(eng);
  const memory::dims src = cpu::onednn_dims(l.x()), wei = cpu::onednn_dims(l.weight()),
                     dst = cpu::onednn_dims(l.y());
  const memory::dims strides{l.stride, l.stride}, dil{0, 0}, pad{l.padding, l.padding};
  const auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc fwd_pd(forward_desc(l), eng);

  // Data in the primitive's layout, filled by reordering random plain data.
  std::vector<std::vector<float>> plain_data;
  auto make = [&](const memory::desc& wanted, const Shape& shape) {
    plain_data.push_back(random_data(shape));
    dnnl::memory plain(cpu::plain_desc(cpu::onednn_dims(shape)), eng, plain_data.back().data());
    dnnl::memory m(wanted, eng);
    dnnl::reorder(plain, m).execute(stream, plain, m);
    stream.wait();
    return m;
  };

  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  switch (conv_op(l, direction)) {
    case ConvOp::Forward:
      prim = dnnl::convolution_forward(fwd_pd);
      args = {{DNNL_ARG_SRC, make(fwd_pd.src_desc(), l.x())},
              {DNNL_ARG_WEIGHTS, make(fwd_pd.weights_desc(), l.weight())},
              {DNNL_ARG_DST, make(fwd_pd.dst_desc(), l.y())}};
      break;
    case ConvOp::BackwardData: {
      dnnl::convolution_backward_data::desc d(alg, cpu::any_desc(src), cpu::any_desc(wei),
                                              cpu::any_desc(dst), strides, dil, pad, pad);
      dnnl::convolution_backward_data::primitive_desc pd(d, eng, fwd_pd);
      prim = dnnl::convolution_backward_data(pd);
      args = {{DNNL_ARG_DIFF_DST, make(pd.diff_dst_desc(), l.y())},
              {DNNL_ARG_WEIGHTS, make(pd.weights_desc(), l.weight())},
              {DNNL_ARG_DIFF_SRC, make(pd.diff_src_desc(), l.x())}};
      break;
    }
    case ConvOp::BackwardWeights: {
      dnnl::convolution_backward_weights::desc d(alg, cpu::any_desc(src), cpu::any_desc(wei),
                                                 cpu::any_desc(dst), strides, dil, pad, pad);
      dnnl::convolution_backward_weights::primitive_desc pd(d, eng, fwd_pd);
      prim = dnnl::convolution_backward_weights(pd);
      args = {{DNNL_ARG_SRC, make(pd.src_desc(), l.x())},
              {DNNL_ARG_DIFF_DST, make(pd.diff_dst_desc(), l.y())},
              {DNNL_ARG_DIFF_WEIGHTS, make(pd.diff_weights_desc(), l.weight())}};
      break;
    }
  }
  for (auto _ : state) {
    prim.execute(stream, args);
    stream.wait();
  }
  set_counters(state, l);
}

// D1's forward with its LeakyReLU(0.2) on the primitive Gantry's Auto layout runs there (the
// blocked JIT kernel: its 1-channel source stays plain, so nothing is padded), with the data
// already in its layouts: the activation as a oneDNN eltwise post-op (`fused`), or as CpuBackend's
// elementwise pass over the (blocked) output after it.
void bench_conv_leaky_relu(benchmark::State& state, const Layer& l, bool fused, int threads) {
  set_num_threads(threads);
  omp_set_num_threads(threads);
  const dnnl::engine& eng = cpu::onednn_engine();
  dnnl::stream stream(eng);
  dnnl::primitive_attr attr;
  if (fused) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.2f, 0.f);
    attr.set_post_ops(ops);
  }
  dnnl::convolution_forward::primitive_desc pd(forward_desc(l), attr, eng);
  // Random values in whatever layout the primitive chose (only the time is read).
  std::vector<float> x = random_data(l.x()), w = random_data(l.weight());
  std::vector<float> y(pd.dst_desc().get_size() / sizeof(float));
  x.resize(pd.src_desc().get_size() / sizeof(float));
  w.resize(pd.weights_desc().get_size() / sizeof(float));
  dnnl::memory xm(pd.src_desc(), eng, x.data()), wm(pd.weights_desc(), eng, w.data()),
      ym(pd.dst_desc(), eng, y.data());
  dnnl::convolution_forward prim(pd);
  cpu::CpuBackend backend;
  const View yv{y.data(), Shape{static_cast<int64_t>(y.size())}, DType::F32, Device::cpu()};
  for (auto _ : state) {
    prim.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}});
    stream.wait();
    if (!fused) backend.unary(UnaryFn{UnaryOp::LeakyRelu, 0.2f, 0.f}, yv, yv);
    benchmark::ClobberMemory();
  }
  state.SetLabel(pd.impl_info_str());
  set_counters(state, l);
}

void register_all() {
  static const char* const kDirections[] = {"fwd", "bwd_data", "bwd_weights"};
  for (const Layer& l : kLayers) {
    for (int direction = 0; direction < 3; ++direction) {
      for (int threads : {1, 2}) {
        const std::string base = std::string(l.name) + "/" + kDirections[direction] + "/";
        const std::string suffix = "/threads:" + std::to_string(threads);
        for (auto [layout, label] : {std::pair{cpu::ConvLayout::Auto, "gantry_auto"},
                                     std::pair{cpu::ConvLayout::Plain, "gantry_plain"},
                                     std::pair{cpu::ConvLayout::Blocked, "gantry_blocked"}}) {
          benchmark::RegisterBenchmark((base + label + suffix).c_str(),
                                       [&l, direction, layout, threads](benchmark::State& s) {
                                         bench_gantry(s, l, direction, layout, threads);
                                       })
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
        benchmark::RegisterBenchmark((base + "raw_blocked" + suffix).c_str(),
                                     [&l, direction, threads](benchmark::State& s) {
                                       bench_raw(s, l, direction, threads);
                                     })
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  const Layer& d1 = kLayers[4];
  for (int threads : {1, 2}) {
    for (bool fused : {false, true}) {
      const std::string name = std::string("D1_conv_lrelu/fwd/") + (fused ? "post_op" : "separate_pass") +
                               "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), [&d1, fused, threads](benchmark::State& s) {
        bench_conv_leaky_relu(s, d1, fused, threads);
      })->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  gantry::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
