#include "backend/cpu/onednn_conv_timing.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <unordered_map>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"
#include "base/threads.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;

struct Geometry {
  memory::dims src, weights, dst, strides, dilates, pad_l, pad_r;
};

Geometry geometry(const ConvCall& c) {
  Geometry g{onednn_dims(c.src), onednn_dims(c.weights), onednn_dims(c.dst), {}, {}, {}, {}};
  const int64_t groups = c.params.groups;
  if (groups > 1) g.weights = {groups, c.weights[0] / groups, c.weights[1], c.weights[2], c.weights[3]};
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = (c.weights[2 + i] - 1) * c.params.dilation[i] + 1;
    g.strides.push_back(c.params.stride[i]);
    g.dilates.push_back(c.params.dilation[i] - 1);
    g.pad_l.push_back(c.params.padding[i]);
    g.pad_r.push_back((c.dst[2 + i] - 1) * c.params.stride[i] + extent - c.src[2 + i] -
                      c.params.padding[i]);
  }
  return g;
}

// A memory in `desc` holding random values in [-1, 1] (reordered from plain data).
memory random_memory(const memory::desc& desc, const memory::dims& dims, dnnl::stream& stream) {
  const dnnl::engine& eng = onednn_engine();
  int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& v : values) v = dist(rng);
  memory plain(plain_desc(dims), eng, values.data());
  memory m(desc, eng);
  dnnl::reorder(plain, m).execute(stream, plain, m);
  stream.wait();
  return m;
}

// Seconds per execution of `prim`: the best of five rounds of at least 3 runs and a fifth of
// min_seconds each, so that a round slowed down by other processes does not count.
double time_primitive(const dnnl::primitive& prim, std::unordered_map<int, memory>& args,
                      dnnl::stream& stream, double min_seconds) {
  using clock = std::chrono::steady_clock;
  prim.execute(stream, args);  // warm caches and page in
  stream.wait();
  constexpr int kRounds = 5;
  double best = 0;
  for (int round = 0; round < kRounds; ++round) {
    int64_t reps = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    while (reps < 3 || elapsed < min_seconds / kRounds) {
      prim.execute(stream, args);
      stream.wait();
      ++reps;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    const double per_call = elapsed / static_cast<double>(reps);
    best = round == 0 ? per_call : std::min(best, per_call);
  }
  return best;
}

// Times the primitive for `call` with all of its tensors in `make_desc`'s layouts; returns a
// negative number when oneDNN only has a reference implementation for them (not a roofline).
template <typename MakeDesc>
double time_layout(const ConvCall& call, MakeDesc make_desc, double min_seconds) {
  const dnnl::engine& eng = onednn_engine();
  dnnl::stream stream(eng);
  const Geometry g = geometry(call);
  const auto alg = dnnl::algorithm::convolution_direct;
  const memory::desc src = make_desc(g.src), wei = make_desc(g.weights), dst = make_desc(g.dst);
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src, wei, dst,
                                      g.strides, g.dilates, g.pad_l, g.pad_r),
      eng);
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  std::string impl;
  switch (call.direction) {
    case ConvDirection::Forward:
      impl = fwd.impl_info_str();
      prim = dnnl::convolution_forward(fwd);
      args = {{DNNL_ARG_SRC, random_memory(fwd.src_desc(), g.src, stream)},
              {DNNL_ARG_WEIGHTS, random_memory(fwd.weights_desc(), g.weights, stream)},
              {DNNL_ARG_DST, random_memory(fwd.dst_desc(), g.dst, stream)}};
      break;
    case ConvDirection::BackwardData: {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(alg, src, wei, dst, g.strides, g.dilates,
                                                g.pad_l, g.pad_r),
          eng, fwd);
      impl = pd.impl_info_str();
      prim = dnnl::convolution_backward_data(pd);
      args = {{DNNL_ARG_DIFF_DST, random_memory(pd.diff_dst_desc(), g.dst, stream)},
              {DNNL_ARG_WEIGHTS, random_memory(pd.weights_desc(), g.weights, stream)},
              {DNNL_ARG_DIFF_SRC, random_memory(pd.diff_src_desc(), g.src, stream)}};
      break;
    }
    case ConvDirection::BackwardWeights: {
      dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(alg, src, wei, dst, g.strides, g.dilates,
                                                   g.pad_l, g.pad_r),
          eng, fwd);
      impl = pd.impl_info_str();
      prim = dnnl::convolution_backward_weights(pd);
      args = {{DNNL_ARG_SRC, random_memory(pd.src_desc(), g.src, stream)},
              {DNNL_ARG_DIFF_DST, random_memory(pd.diff_dst_desc(), g.dst, stream)},
              {DNNL_ARG_DIFF_WEIGHTS, random_memory(pd.diff_weights_desc(), g.weights, stream)}};
      break;
    }
  }
  if (impl.rfind("ref", 0) == 0) return -1;
  return time_primitive(prim, args, stream, min_seconds);
}

}  // namespace

double raw_conv_seconds(const ConvCall& call, double min_seconds) {
  GANTRY_CHECK(call.src.rank() == 4 && call.weights.rank() == 4 && call.dst.rank() == 4,
               "raw_conv_seconds: expected 4-D shapes, found ", call.src.str(), ", ",
               call.weights.str(), ", ", call.dst.str());
  ThreadBudgetScope budget(call.threads);
  apply_thread_budget();
  try {
    const double blocked = time_layout(call, [](const memory::dims& d) { return any_desc(d); }, min_seconds);
    const double plain = time_layout(
        call, [](const memory::dims& d) { return plain_desc(d); }, min_seconds);
    if (blocked < 0) return plain;
    return plain < 0 ? blocked : std::min(blocked, plain);
  } catch (const dnnl::error& e) {
    GANTRY_FAIL("raw_conv_seconds: oneDNN could not run the convolution ", call.src.str(), " * ",
                call.weights.str(), " -> ", call.dst.str(), ": ", e.what());
  }
}

}  // namespace gantry::cpu
