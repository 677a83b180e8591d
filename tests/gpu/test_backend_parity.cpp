// Every method of the Backend interface on cuda:0 against the CPU backend, outputs pre-filled
// with NaN so a kernel that writes nothing (or only part) fails. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "gpu_test_support.h"

namespace gantry::gputest {
namespace {

constexpr Tolerance kExact{0.0, 0.0};
constexpr Tolerance kElementwise{1e-6, 1e-5};  // CUDA's expf/logf/tanhf vs glibc: a few ulps
constexpr Tolerance kDense{1e-4, 1e-4};        // FMA and blocking orders of cuDNN/cuBLAS/oneDNN

class BackendParity : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }

  // Runs f(backend, side) on the CPU backend and on the CUDA backend.
  template <typename F>
  void both(F&& f) {
    f(backend_for(Device::cpu()), kCpu);
    f(backend_for(Device::cuda(0)), kGpu);
  }
};

// ---- memory and layout

TEST_F(BackendParity, CopiesRoundTripAndCopyOnTheDevice) {
  Pair x = random_input(Shape{3, 7}, 1);
  std::vector<float> back(21, std::numeric_limits<float>::quiet_NaN());
  backend_for(Device::cuda(0)).copy_to_host(x[kGpu], back.data());
  EXPECT_EQ(back, x.t[kCpu].to_vector());
  Pair y = output(Shape{3, 7});
  both([&](Backend& b, Side s) { b.copy(x[s], y[s]); });
  EXPECT_TRUE(gpu_matches_cpu(y, kExact, "copy"));
}

TEST_F(BackendParity, StridedCopyPermutesBroadcastsAndSlices) {
  Pair x = random_input(Shape{2, 3, 4}, 2);
  // permute (2, 3, 4) -> (4, 2, 3): dst[k][i][j] = x[i][j][k]
  Pair perm = output(Shape{4, 2, 3});
  both([&](Backend& b, Side s) {
    StridedView src{x[s].data, Shape{4, 2, 3}, {1, 12, 4}, DType::F32, x[s].device};
    b.strided_copy(src, StridedView::contiguous(perm[s]));
  });
  EXPECT_TRUE(gpu_matches_cpu(perm, kExact, "permute"));
  // broadcast a row (4) to (3, 4)
  Pair row = random_input(Shape{4}, 3);
  Pair bcast = output(Shape{3, 4});
  both([&](Backend& b, Side s) {
    StridedView src{row[s].data, Shape{3, 4}, {0, 1}, DType::F32, row[s].device};
    b.strided_copy(src, StridedView::contiguous(bcast[s]));
  });
  EXPECT_TRUE(gpu_matches_cpu(bcast, kExact, "broadcast"));
  // slice x[:, 1:3, 2:] into a (2, 2, 2) tensor
  Pair slice = output(Shape{2, 2, 2});
  both([&](Backend& b, Side s) {
    StridedView src{x[s].as<float>() + 4 + 2, Shape{2, 2, 2}, {12, 4, 1}, DType::F32,
                    x[s].device};
    b.strided_copy(src, StridedView::contiguous(slice[s]));
  });
  EXPECT_TRUE(gpu_matches_cpu(slice, kExact, "slice"));
  // an i64 tensor transposed (element size 8)
  Pair idx = input_i64({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Pair idx_t = output(Shape{3, 2}, DType::I64);
  both([&](Backend& b, Side s) {
    StridedView src{idx[s].data, Shape{3, 2}, {1, 3}, DType::I64, idx[s].device};
    b.strided_copy(src, StridedView::contiguous(idx_t[s]));
  });
  EXPECT_TRUE(gpu_matches_cpu(idx_t, kExact, "i64 transpose"));
}

TEST_F(BackendParity, CastsBetweenEveryStorageType) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Pair x = input({-300.f, -1.5f, -0.5f, 0.f, 0.49f, 0.5f, 1.5f, 2.5f, 254.5f, 255.6f, 1e6f,
                  65504.f, 1e-8f, 3.14159f, nan, -7.99f},
                 Shape{16});
  for (DType to : {DType::F16, DType::BF16, DType::U8, DType::I64}) {
    Pair y = output(Shape{16}, to);
    both([&](Backend& b, Side s) { b.cast(x[s], y[s]); });
    EXPECT_TRUE(gpu_matches_cpu(y, kExact, "cast f32 -> " + to_string(to)));
    Pair back = output(Shape{16});  // and back to f32, each side from its own result
    both([&](Backend& b, Side s) { b.cast(y[s], back[s]); });
    EXPECT_TRUE(gpu_matches_cpu(back, kExact, "cast " + to_string(to) + " -> f32"));
  }
  Pair bytes = output(Shape{16}, DType::U8);
  both([&](Backend& b, Side s) { b.cast(x[s], bytes[s]); });
  Pair labels = output(Shape{16}, DType::I64);
  both([&](Backend& b, Side s) { b.cast(bytes[s], labels[s]); });
  EXPECT_TRUE(gpu_matches_cpu(labels, kExact, "cast u8 -> i64"));
}

TEST_F(BackendParity, FillsEveryType) {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::U8, DType::I64}) {
    // u8 rounds half up and saturates on both (backend/functors.h)
    for (double value : {0.0, -0.0, 3.25, 3.7, 300.0, -2.0}) {
      Pair y = output(Shape{5, 3}, type);
      both([&](Backend& b, Side s) { b.fill(y[s], value); });
      EXPECT_TRUE(gpu_matches_cpu(y, kExact, "fill " + to_string(type) + " " +
                                                 std::to_string(value)));
    }
  }
  Pair big = output(Shape{3}, DType::I64);  // beyond f32's 24-bit mantissa
  both([&](Backend& b, Side s) { b.fill(big[s], 1099511627777.0); });
  EXPECT_EQ(big.t[kGpu].to_vector(), big.t[kCpu].to_vector());
}

TEST_F(BackendParity, RandomStreamsAreTheSameOnBothDevices) {
  RngKey key{11, stream_id(5, 6)};
  Pair u = output(Shape{1003});
  both([&](Backend& b, Side s) { b.random(u[s], Distribution::Uniform, key, 17, -1.f, 3.f); });
  EXPECT_TRUE(gpu_matches_cpu(u, kExact, "uniform"));
  Pair n = output(Shape{1003});
  both([&](Backend& b, Side s) { b.random(n[s], Distribution::Normal, key, 17, 0.5f, 2.f); });
  EXPECT_TRUE(gpu_matches_cpu(n, Tolerance{1e-6, 1e-5}, "normal"));
}

// ---- elementwise

TEST_F(BackendParity, UnaryOps) {
  std::vector<float> xs = values(997, 4, -6.f, 6.f);
  xs.insert(xs.end(), {0.f, -0.f, 1e-30f, -1e-30f, 80.f, -80.f});
  Pair x = input(xs, Shape{static_cast<int64_t>(xs.size())});
  for (int op = 0; op <= static_cast<int>(UnaryOp::LeakyReluSlope); ++op) {
    const auto uop = static_cast<UnaryOp>(op);
    const UnaryFn fn{uop, uop == UnaryOp::Pow ? 3.f : 0.2f, 1.5f};
    Pair y = output(x.t[kCpu].shape());
    both([&](Backend& b, Side s) { b.unary(fn, x[s], y[s]); });
    EXPECT_TRUE(gpu_matches_cpu(y, kElementwise, "unary op " + std::to_string(op)));
  }
}

TEST_F(BackendParity, BinaryOpsWithAndWithoutBroadcasting) {
  struct Shapes {
    Shape a, b, y;
  };
  const Shapes cases[] = {{Shape{4, 5}, Shape{4, 5}, Shape{4, 5}},
                          {Shape{3, 1, 5}, Shape{4, 1}, Shape{3, 4, 5}},
                          {Shape{1}, Shape{2, 3}, Shape{2, 3}},
                          {Shape{2, 3, 4, 5}, Shape{3, 1, 1}, Shape{2, 3, 4, 5}}};
  for (const Shapes& c : cases) {
    Pair a = random_input(c.a, 5), b = random_input(c.b, 6);
    for (int op = 0; op <= static_cast<int>(BinaryOp::Eq); ++op) {
      BinaryFn fn{static_cast<BinaryOp>(op)};
      Pair y = output(c.y);
      both([&](Backend& be, Side s) { be.binary(fn, a[s], b[s], y[s]); });
      EXPECT_TRUE(gpu_matches_cpu(y, kElementwise, "binary op " + std::to_string(op) + " " +
                                                       c.a.str() + " x " + c.b.str()));
    }
  }
}

TEST_F(BackendParity, WhereBroadcastsItsThreeInputs) {
  Pair cond = input({1.f, 0.f, 1.f, 0.f}, Shape{4, 1});
  Pair a = random_input(Shape{4, 6}, 7), b = random_input(Shape{6}, 8);
  Pair y = output(Shape{4, 6});
  both([&](Backend& be, Side s) { be.where(cond[s], a[s], b[s], y[s]); });
  EXPECT_TRUE(gpu_matches_cpu(y, kExact, "where"));
}

TEST_F(BackendParity, ReductionsOverEveryAxisSet) {
  Pair x = random_input(Shape{4, 5, 6}, 9);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    for (uint32_t mask = 1; mask < 8; ++mask) {
      Shape ys{mask & 1 ? 1 : 4, mask & 2 ? 1 : 5, mask & 4 ? 1 : 6};
      Pair y = output(ys);
      both([&](Backend& b, Side s) { b.reduce(ReduceFn{op}, x[s], mask, y[s]); });
      EXPECT_TRUE(gpu_matches_cpu(y, Tolerance{1e-5, 1e-5}, "reduce op " +
                                      std::to_string(static_cast<int>(op)) + " mask " +
                                      std::to_string(mask)));
    }
  }
  // a long reduction (the multi-block path) and a reduction over an empty axis set
  Pair big = random_input(Shape{2, 70001}, 10);
  Pair sums = output(Shape{2, 1});
  both([&](Backend& b, Side s) { b.reduce(ReduceFn{ReduceOp::Sum}, big[s], 0b10, sums[s]); });
  EXPECT_TRUE(gpu_matches_cpu(sums, Tolerance{1e-3, 1e-5}, "long sum"));
  Pair same = output(Shape{4, 5, 6});
  both([&](Backend& b, Side s) { b.reduce(ReduceFn{ReduceOp::Sum}, x[s], 0, same[s]); });
  EXPECT_TRUE(gpu_matches_cpu(same, kExact, "reduce over no axis"));
}

// ---- indexing

TEST_F(BackendParity, IndexSelectAlongEveryDimension) {
  Pair x = random_input(Shape{5, 3, 4}, 11);
  Pair index = input_i64({4, 0, 0, 2}, Shape{4});
  const Shape out_shapes[] = {Shape{4, 3, 4}, Shape{5, 4, 4}, Shape{5, 3, 4}};
  for (int dim = 0; dim < 3; ++dim) {
    // every index within the size of `dim` (5, 3, 4)
    Pair idx = dim == 0 ? index : input_i64(dim == 1 ? std::vector<int64_t>{2, 0, 1, 1}
                                                     : std::vector<int64_t>{3, 0, 0, 2},
                                            Shape{4});
    Pair y = output(out_shapes[dim]);
    both([&](Backend& b, Side s) { b.index_select(x[s], dim, idx[s], y[s]); });
    EXPECT_TRUE(gpu_matches_cpu(y, kExact, "index_select dim " + std::to_string(dim)));
  }
  Pair labels = input_i64({7, 8, 9}, Shape{3, 1});  // i64 data (embedding of labels)
  Pair picked = output(Shape{2, 1}, DType::I64);
  Pair rows = input_i64({2, 0}, Shape{2});
  both([&](Backend& b, Side s) { b.index_select(labels[s], 0, rows[s], picked[s]); });
  EXPECT_TRUE(gpu_matches_cpu(picked, kExact, "index_select i64"));
}

TEST_F(BackendParity, IndexAddWithRepeatedIndices) {
  for (int dim : {0, 1}) {
    Shape base_shape = dim == 0 ? Shape{4, 3} : Shape{3, 4};
    Shape src_shape = dim == 0 ? Shape{5, 3} : Shape{3, 5};
    Pair index = input_i64({1, 3, 1, 0, 1}, Shape{5});
    Pair src = random_input(src_shape, 12);
    Pair y = random_input(base_shape, 13);  // index_add adds into initialised data
    both([&](Backend& b, Side s) { b.index_add(src[s], dim, index[s], y[s]); });
    EXPECT_TRUE(gpu_matches_cpu(y, kElementwise, "index_add dim " + std::to_string(dim)));
  }
}

// ---- dense ops

struct ConvCase {
  Shape x, w, y;
  ConvParams p;
};

std::vector<ConvCase> conv_cases() {
  ConvParams plain, strided, dilated, grouped;
  strided.stride[0] = strided.stride[1] = 2;
  strided.padding[0] = strided.padding[1] = 1;
  dilated.dilation[0] = dilated.dilation[1] = 2;
  dilated.padding[0] = 2;
  dilated.padding[1] = 1;
  grouped.padding[0] = grouped.padding[1] = 1;
  grouped.groups = 4;  // r3gan's grouped 3x3 (Note [grouped convolution])
  return {{Shape{2, 3, 7, 6}, Shape{4, 3, 3, 3}, Shape{2, 4, 5, 4}, plain},
          {Shape{2, 3, 8, 8}, Shape{5, 3, 4, 4}, Shape{2, 5, 4, 4}, strided},
          {Shape{1, 2, 9, 9}, Shape{3, 2, 3, 3}, Shape{1, 3, 9, 7}, dilated},
          {Shape{2, 32, 6, 6}, Shape{32, 8, 3, 3}, Shape{2, 32, 6, 6}, grouped}};
}

TEST_F(BackendParity, ConvolutionForwardWithAndWithoutBias) {
  for (const ConvCase& c : conv_cases()) {
    Pair x = random_input(c.x, 14), w = random_input(c.w, 15), bias = random_input(Shape{c.w[0]}, 16);
    for (bool with_bias : {false, true}) {
      Pair y = output(c.y);
      both([&](Backend& b, Side s) {
        b.conv2d_forward(x[s], w[s], with_bias ? bias.ptr(s) : nullptr, c.p, y[s]);
      });
      EXPECT_TRUE(gpu_matches_cpu(y, kDense, "conv2d " + c.x.str() + (with_bias ? " + bias" : "")));
    }
  }
}

TEST_F(BackendParity, ConvolutionBackwardDataAndWeights) {
  for (const ConvCase& c : conv_cases()) {
    Pair x = random_input(c.x, 17), w = random_input(c.w, 18), gy = random_input(c.y, 19);
    Pair gx = output(c.x), gw = output(c.w);
    both([&](Backend& b, Side s) {
      b.conv2d_backward_data(gy[s], w[s], c.p, gx[s]);
      b.conv2d_backward_weights(x[s], gy[s], c.p, gw[s]);
    });
    EXPECT_TRUE(gpu_matches_cpu(gx, kDense, "conv2d backward data " + c.x.str()));
    EXPECT_TRUE(gpu_matches_cpu(gw, kDense, "conv2d backward weights " + c.x.str()));
  }
}

TEST_F(BackendParity, MatmulWithEveryTransposeAndBias) {
  const int64_t m = 7, k = 5, n = 6;
  Pair bias = random_input(Shape{n}, 20);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Pair a = random_input(ta ? Shape{k, m} : Shape{m, k}, 21);
      Pair b = random_input(tb ? Shape{n, k} : Shape{k, n}, 22);
      for (bool with_bias : {false, true}) {
        Pair y = output(Shape{m, n});
        both([&](Backend& be, Side s) {
          be.matmul(a[s], b[s], ta, tb, with_bias ? bias.ptr(s) : nullptr, y[s]);
        });
        // A stream, not std::string operator+: gcc 12 at -O2 reports that chain as an
        // out-of-bounds memcpy (-Warray-bounds, a known false positive of its string inlining).
        std::ostringstream what;
        what << "matmul ta=" << ta << " tb=" << tb << (with_bias ? " + bias" : "");
        EXPECT_TRUE(gpu_matches_cpu(y, kDense, what.str()));
      }
    }
  }
  // an empty inner dimension gives the bias (closed form: the CPU's oneDNN path is no oracle
  // for K = 0)
  Pair a0 = input({}, Shape{3, 0}), b0 = input({}, Shape{0, 2});
  Pair bias2 = input({1.5f, -2.f}, Shape{2});
  Pair y0 = output(Shape{3, 2});
  backend_for(Device::cuda(0)).matmul(a0[kGpu], b0[kGpu], false, false, bias2.ptr(kGpu), y0[kGpu]);
  EXPECT_EQ(y0.t[kGpu].to_vector(), (std::vector<float>{1.5f, -2.f, 1.5f, -2.f, 1.5f, -2.f}));
}

TEST_F(BackendParity, BatchNormTrainingInferenceAndBackward) {
  for (Shape xs : {Shape{4, 3, 5, 5}, Shape{6, 3}}) {
    Pair x = random_input(xs, 23, -1.f, 3.f), gy = random_input(xs, 24);
    Pair gamma = random_input(Shape{3}, 25, 0.5f, 1.5f), beta = random_input(Shape{3}, 26);
    // Plain, and with LeakyReLU fused (affine runs; Note [batch norm + activation]).
    for (bool affine : {false, true}) {
      BatchNormActivation act;
      if (affine) act = {BatchNormActivation::Kind::LeakyRelu, 0.2f};
      const std::string what = xs.str() + (affine ? " affine, leaky relu fused" : "");
      Pair y = output(xs), mean = output(Shape{3}), var = output(Shape{3});
      both([&](Backend& b, Side s) {
        b.batch_norm_forward_training(x[s], affine ? gamma.ptr(s) : nullptr,
                                      affine ? beta.ptr(s) : nullptr, 1e-5f, act, y[s], mean[s],
                                      var[s]);
      });
      EXPECT_TRUE(gpu_matches_cpu(y, kDense, "batch_norm training y " + what));
      EXPECT_TRUE(gpu_matches_cpu(mean, kDense, "batch_norm training mean " + what));
      EXPECT_TRUE(gpu_matches_cpu(var, kDense, "batch_norm training var " + what));

      Pair yi = output(xs);
      both([&](Backend& b, Side s) {
        b.batch_norm_forward_inference(x[s], affine ? gamma.ptr(s) : nullptr,
                                       affine ? beta.ptr(s) : nullptr, mean[s], var[s], 1e-5f,
                                       yi[s]);
      });
      EXPECT_TRUE(gpu_matches_cpu(yi, kDense, "batch_norm inference " + what));

      Pair gx = output(xs), ggamma = output(Shape{3}), gbeta = output(Shape{3});
      both([&](Backend& b, Side s) {
        const View& out = y[s];
        b.batch_norm_backward(x[s], gy[s], mean[s], var[s], affine ? gamma.ptr(s) : nullptr,
                              1e-5f, act, act.enabled() ? &out : nullptr, gx[s],
                              affine ? ggamma.ptr(s) : nullptr, affine ? gbeta.ptr(s) : nullptr);
      });
      EXPECT_TRUE(gpu_matches_cpu(gx, kDense, "batch_norm backward gx " + what));
      if (affine) {
        EXPECT_TRUE(gpu_matches_cpu(ggamma, kDense, "batch_norm backward ggamma " + what));
        EXPECT_TRUE(gpu_matches_cpu(gbeta, kDense, "batch_norm backward gbeta " + what));
      }
    }
  }
}

TEST_F(BackendParity, PoolingForwardAndBackward) {
  PoolParams max_pad;
  max_pad.kind = PoolKind::Max;
  max_pad.kernel[0] = max_pad.kernel[1] = 3;
  max_pad.stride[0] = max_pad.stride[1] = 2;
  max_pad.padding[0] = max_pad.padding[1] = 1;
  PoolParams avg_incl = max_pad, avg_excl = max_pad, max_plain;
  avg_incl.kind = avg_excl.kind = PoolKind::Avg;
  avg_excl.count_include_pad = false;
  const Shape xs{2, 3, 7, 8};
  const Shape padded_ys{2, 3, 4, 4}, plain_ys{2, 3, 3, 4};
  struct Case {
    PoolParams p;
    Shape ys;
    const char* what;
  };
  for (const Case& c : {Case{max_plain, plain_ys, "max 2x2"}, Case{max_pad, padded_ys, "max 3x3 pad 1"},
                        Case{avg_incl, padded_ys, "avg include pad"},
                        Case{avg_excl, padded_ys, "avg exclude pad"}}) {
    Pair x = random_input(xs, 27), gy = random_input(c.ys, 28);
    Pair y = output(c.ys), gx = output(xs);
    Tensor workspace[2];
    View ws_view[2];
    both([&](Backend& b, Side s) {  // each backend keeps its own workspace format
      size_t bytes = b.pool_workspace_bytes(c.p, x[s], y[s]);
      if (bytes) {
        workspace[s] = Tensor::empty(Shape{static_cast<int64_t>(bytes)}, DType::U8, x[s].device);
        ws_view[s] = workspace[s].view();
      }
      b.pool2d_forward(c.p, x[s], y[s], bytes ? &ws_view[s] : nullptr);
      b.pool2d_backward(c.p, gy[s], bytes ? &ws_view[s] : nullptr, gx[s]);
    });
    EXPECT_TRUE(gpu_matches_cpu(y, kElementwise, std::string("pool forward ") + c.what));
    EXPECT_TRUE(gpu_matches_cpu(gx, kElementwise, std::string("pool backward ") + c.what));
  }
}

}  // namespace
}  // namespace gantry::gputest
