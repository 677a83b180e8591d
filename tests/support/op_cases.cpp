// The op harness's cases (Note [op harness] in op_harness.h), grouped by what they exercise. A
// case is a function of its inputs on a device: the first groups call the Backend directly
// (memory, casts, fills, Philox streams, every elementwise functor, reductions, indexing and the
// dense kernels on hand-picked geometries), the later ones go through the core ops, whose
// gradients the harness takes to second order. A new op adds its cases here.
#include <cmath>
#include <limits>
#include <sstream>

#include "backend/backend.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "support/op_harness.h"

namespace gantry::testing {

namespace {

using Cases = std::vector<OpCase>;
using Fn = std::function<TensorList(const TensorList&, Device)>;

// ---- helpers for cases that call the backend directly

Tensor uniform(const Shape& shape, uint64_t seed, Device d, float lo = -2.f, float hi = 2.f) {
  return ops::from_vector(uniform_values(shape.numel(), seed, lo, hi), shape, d);
}
Tensor values_on(const std::vector<float>& v, const Shape& shape, Device d) { return ops::from_vector(v, shape, d); }
Tensor indices_on(const std::vector<int64_t>& v, const Shape& shape, Device d) { return ops::from_vector(v, shape, d); }
Tensor index_on(Device d, const std::vector<int64_t>& v) {
  return ops::from_vector(v, Shape{static_cast<int64_t>(v.size())}, d);
}
Tensor output(const Shape& shape, Device d, DType dtype = DType::F32) { return Tensor::empty(shape, dtype, d); }
const View* view_or_null(const Tensor& t, View& storage) {
  if (!t.defined()) return nullptr;
  storage = t.view();
  return &storage;
}

// A case of backend calls without inputs from the harness: compared as they are, not
// differentiated.
OpCase backend_case(const std::string& group, std::string name, Precision precision,
                    std::function<TensorList(Device)> run) {
  return OpCase{group, std::move(name), {}, [run](const TensorList&, Device d) { return run(d); },
                Order::Forward, precision};
}

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// ---- memory, layout copies, casts, fills, Philox streams

void memory_cases(Cases& cases) {
  const std::string g = "Memory";
  cases.push_back(backend_case(g, "copy", Precision::Exact, [](Device d) {
    Tensor x = uniform(Shape{3, 7}, 1, d), y = output(Shape{3, 7}, d);
    backend_for(d).copy(x.view(), y.view());
    return TensorList{y};
  }));
  cases.push_back(backend_case(g, "copy_to_host", Precision::Exact, [](Device d) {
    Tensor x = uniform(Shape{3, 7}, 1, d);
    std::vector<float> host(21, std::numeric_limits<float>::quiet_NaN());
    backend_for(d).copy_to_host(x.view(), host.data());
    return TensorList{ops::from_vector(host, Shape{3, 7})};
  }));
  // strided copies: permute (2, 3, 4) -> (4, 2, 3), a row broadcast to (3, 4), the slice
  // x[:, 1:3, 2:], and an i64 transpose (element size 8)
  cases.push_back(backend_case(g, "strided_copy permute", Precision::Exact, [](Device d) {
    Tensor x = uniform(Shape{2, 3, 4}, 2, d), y = output(Shape{4, 2, 3}, d);
    backend_for(d).strided_copy(StridedView{x.view().data, Shape{4, 2, 3}, {1, 12, 4}, DType::F32, d},
                                StridedView::contiguous(y.view()));
    return TensorList{y};
  }));
  cases.push_back(backend_case(g, "strided_copy broadcast", Precision::Exact, [](Device d) {
    Tensor row = uniform(Shape{4}, 3, d), y = output(Shape{3, 4}, d);
    backend_for(d).strided_copy(StridedView{row.view().data, Shape{3, 4}, {0, 1}, DType::F32, d},
                                StridedView::contiguous(y.view()));
    return TensorList{y};
  }));
  cases.push_back(backend_case(g, "strided_copy slice", Precision::Exact, [](Device d) {
    Tensor x = uniform(Shape{2, 3, 4}, 2, d), y = output(Shape{2, 2, 2}, d);
    backend_for(d).strided_copy(StridedView{x.view().as<float>() + 4 + 2, Shape{2, 2, 2}, {12, 4, 1}, DType::F32, d},
                                StridedView::contiguous(y.view()));
    return TensorList{y};
  }));
  cases.push_back(backend_case(g, "strided_copy i64 transpose", Precision::Exact, [](Device d) {
    Tensor x = indices_on({1, 2, 3, 4, 5, 6}, Shape{2, 3}, d), y = output(Shape{3, 2}, d, DType::I64);
    backend_for(d).strided_copy(StridedView{x.view().data, Shape{3, 2}, {1, 3}, DType::I64, d},
                                StridedView::contiguous(y.view()));
    return TensorList{y};
  }));
  // casts of rounding, saturation and NaN cases to every storage type and back, each side
  // converting back its own result
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special{-300.f, -1.5f, -0.5f, 0.f, 0.49f, 0.5f, 1.5f, 2.5f, 254.5f, 255.6f, 1e6f,
                                   65504.f, 1e-8f, 3.14159f, nan, -7.99f};
  for (DType to : {DType::F16, DType::BF16, DType::U8, DType::I64}) {
    auto cast_to = [special, to](Device d) {
      Tensor y = output(Shape{16}, d, to);
      backend_for(d).cast(values_on(special, Shape{16}, d).view(), y.view());
      return y;
    };
    cases.push_back(backend_case(g, "cast f32 -> " + to_string(to), Precision::Exact,
                                 [cast_to](Device d) { return TensorList{cast_to(d)}; }));
    cases.push_back(backend_case(g, "cast " + to_string(to) + " -> f32", Precision::Exact, [cast_to](Device d) {
      Tensor back = output(Shape{16}, d);
      backend_for(d).cast(cast_to(d).view(), back.view());
      return TensorList{back};
    }));
  }
  cases.push_back(backend_case(g, "cast u8 -> i64", Precision::Exact, [special](Device d) {
    Tensor bytes = output(Shape{16}, d, DType::U8), labels = output(Shape{16}, d, DType::I64);
    backend_for(d).cast(values_on(special, Shape{16}, d).view(), bytes.view());
    backend_for(d).cast(bytes.view(), labels.view());
    return TensorList{labels};
  }));
  // fills of every type; u8 rounds half up and saturates (backend/functors.h)
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::U8, DType::I64}) {
    for (double value : {0.0, -0.0, 3.25, 3.7, 300.0, -2.0}) {
      cases.push_back(backend_case(g, "fill " + to_string(type) + " " + str(value), Precision::Exact,
                                   [type, value](Device d) {
                                     Tensor y = output(Shape{5, 3}, d, type);
                                     backend_for(d).fill(y.view(), value);
                                     return TensorList{y};
                                   }));
    }
  }
  cases.push_back(backend_case(g, "fill i64 beyond f32's mantissa", Precision::Exact, [](Device d) {
    Tensor y = output(Shape{3}, d, DType::I64);
    backend_for(d).fill(y.view(), 1099511627777.0);
    return TensorList{y};
  }));
  // Philox streams: uniforms bit for bit, normals to CUDA's logf/sinf/cosf; offsets not
  // block-aligned on purpose
  struct Stream {
    const char* name;
    Distribution dist;
    uint64_t offset;
    float a, b;
    Precision precision;
  };
  for (const Stream& s : {Stream{"uniform", Distribution::Uniform, 17, -1.f, 3.f, Precision::Exact},
                          Stream{"normal", Distribution::Normal, 17, 0.5f, 2.f, Precision::Elementwise},
                          Stream{"uniform at offset 4003", Distribution::Uniform, 4003, -2.f, 3.f, Precision::Exact},
                          Stream{"normal at offset 4003", Distribution::Normal, 4003, 1.f, 0.5f, Precision::Elementwise}}) {
    cases.push_back(backend_case(g, std::string("random ") + s.name, s.precision, [s](Device d) {
      Tensor y = output(Shape{1003}, d);
      backend_for(d).random(y.view(), s.dist, RngKey{11, stream_id(5, 6)}, s.offset, s.a, s.b);
      return TensorList{y};
    }));
  }
}

// ---- every elementwise functor, with and without broadcasting

void elementwise_cases(Cases& cases) {
  const std::string g = "Elementwise";
  // Two sweeps per unary function: random values and special ones, and a grid of quarters out
  // to +-100 with the extremes.
  std::vector<float> random_sweep = uniform_values(997, 4, -6.f, 6.f);
  random_sweep.insert(random_sweep.end(), {0.f, -0.f, 1e-30f, -1e-30f, 80.f, -80.f});
  std::vector<float> grid_sweep;
  for (int i = -400; i <= 400; ++i) grid_sweep.push_back(static_cast<float>(i) * 0.25f);
  grid_sweep.insert(grid_sweep.end(), {-1000.f, 1000.f, 1e-30f, -1e-30f, -0.f});
  struct Sweep {
    const char* name;
    const std::vector<float>* xs;
    float pow_exponent;
  };
  for (const Sweep& sweep : {Sweep{"random", &random_sweep, 3.f}, Sweep{"grid", &grid_sweep, 2.f}}) {
    for (int op = 0; op < kUnaryOpCount; ++op) {
      const auto uop = static_cast<UnaryOp>(op);
      const UnaryFn fn{uop, uop == UnaryOp::Pow ? sweep.pow_exponent : 0.2f, 1.5f};
      const std::vector<float> xs = *sweep.xs;
      cases.push_back(backend_case(g, std::string("unary ") + kUnaryOpNames[op] + " " + sweep.name,
                                   Precision::Elementwise, [fn, xs](Device d) {
                                     const Shape s{static_cast<int64_t>(xs.size())};
                                     Tensor y = output(s, d);
                                     backend_for(d).unary(fn, values_on(xs, s, d).view(), y.view());
                                     return TensorList{y};
                                   }));
    }
  }
  struct Shapes {
    Shape a, b, y;
  };
  for (const Shapes& c : {Shapes{Shape{4, 5}, Shape{4, 5}, Shape{4, 5}}, Shapes{Shape{3, 1, 5}, Shape{4, 1}, Shape{3, 4, 5}},
                          Shapes{Shape{1}, Shape{2, 3}, Shape{2, 3}},
                          Shapes{Shape{2, 3, 4, 5}, Shape{3, 1, 1}, Shape{2, 3, 4, 5}}}) {
    for (int op = 0; op < kBinaryOpCount; ++op) {
      const BinaryFn fn{static_cast<BinaryOp>(op)};
      cases.push_back(backend_case(g, std::string("binary ") + kBinaryOpNames[op] + " " + c.a.str() + " x " + c.b.str(),
                                   Precision::Elementwise, [fn, c](Device d) {
                                     Tensor y = output(c.y, d);
                                     backend_for(d).binary(fn, uniform(c.a, 5, d).view(), uniform(c.b, 6, d).view(), y.view());
                                     return TensorList{y};
                                   }));
    }
  }
  // a (3, 1, 5) op b (4, 1) on small exact values: ties and equalities included
  std::vector<float> av(15), bv(4);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) * 0.5f - 3.f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) - 1.5f;
  for (int op = 0; op < kBinaryOpCount; ++op) {
    const BinaryFn fn{static_cast<BinaryOp>(op)};
    cases.push_back(backend_case(g, std::string("binary ") + kBinaryOpNames[op] + " on halves", Precision::Elementwise,
                                 [fn, av, bv](Device d) {
                                   Tensor y = output(Shape{3, 4, 5}, d);
                                   backend_for(d).binary(fn, values_on(av, Shape{3, 1, 5}, d).view(),
                                                         values_on(bv, Shape{4, 1}, d).view(), y.view());
                                   return TensorList{y};
                                 }));
  }
  cases.push_back(backend_case(g, "where broadcasting its three inputs", Precision::Exact, [](Device d) {
    Tensor y = output(Shape{4, 6}, d);
    backend_for(d).where(values_on({1.f, 0.f, 1.f, 0.f}, Shape{4, 1}, d).view(), uniform(Shape{4, 6}, 7, d).view(),
                         uniform(Shape{6}, 8, d).view(), y.view());
    return TensorList{y};
  }));
}

// ---- reductions over every axis set

void reduction_cases(Cases& cases) {
  const std::string g = "Reductions";
  const char* names[] = {"sum", "max", "min"};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    for (uint32_t mask = 1; mask < 8; ++mask) {
      const Shape ys{mask & 1 ? 1 : 4, mask & 2 ? 1 : 5, mask & 4 ? 1 : 6};
      cases.push_back(backend_case(g, std::string(names[static_cast<int>(op)]) + " mask " + std::to_string(mask),
                                   Precision::Reduction, [op, mask, ys](Device d) {
                                     Tensor y = output(ys, d);
                                     backend_for(d).reduce(ReduceFn{op}, uniform(Shape{4, 5, 6}, 9, d).view(), mask, y.view());
                                     return TensorList{y};
                                   }));
    }
  }
  struct Long {
    const char* name;
    Shape x, y;
    uint32_t mask;
    ReduceOp op;
    float range;
  };
  for (const Long& c : {Long{"sum of 70001 (the multi-block path)", Shape{2, 70001}, Shape{2, 1}, 0b10, ReduceOp::Sum, 2.f},
                        Long{"sum over no axis", Shape{4, 5, 6}, Shape{4, 5, 6}, 0, ReduceOp::Sum, 2.f},
                        Long{"sum of 3000 between axes", Shape{4, 3000, 2}, Shape{4, 1, 2}, 0b010, ReduceOp::Sum, 100.f},
                        Long{"max over the outer axes", Shape{4, 3000, 2}, Shape{1, 3000, 1}, 0b101, ReduceOp::Max, 100.f}}) {
    cases.push_back(backend_case(g, c.name, Precision::Reduction, [c](Device d) {
      Tensor y = output(c.y, d);
      backend_for(d).reduce(ReduceFn{c.op}, uniform(c.x, 10, d, -c.range, c.range).view(), c.mask, y.view());
      return TensorList{y};
    }));
  }
}

// ---- indexing

void indexing_cases(Cases& cases) {
  const std::string g = "Indexing";
  const Shape out_shapes[] = {Shape{4, 3, 4}, Shape{5, 4, 4}, Shape{5, 3, 4}};
  const std::vector<int64_t> picks[] = {{4, 0, 0, 2}, {2, 0, 1, 1}, {3, 0, 0, 2}};  // within (5, 3, 4)
  for (int dim = 0; dim < 3; ++dim) {
    const Shape ys = out_shapes[dim];
    const std::vector<int64_t> pick = picks[dim];
    cases.push_back(backend_case(g, "index_select dim " + std::to_string(dim), Precision::Exact, [dim, ys, pick](Device d) {
      Tensor y = output(ys, d);
      backend_for(d).index_select(uniform(Shape{5, 3, 4}, 11, d).view(), dim, index_on(d, pick).view(), y.view());
      return TensorList{y};
    }));
  }
  cases.push_back(backend_case(g, "index_select of i64 labels", Precision::Exact, [](Device d) {
    Tensor y = output(Shape{2, 1}, d, DType::I64);
    backend_for(d).index_select(indices_on({7, 8, 9}, Shape{3, 1}, d).view(), 0, index_on(d, {2, 0}).view(), y.view());
    return TensorList{y};
  }));
  for (int dim : {0, 1}) {
    cases.push_back(backend_case(g, "index_add with repeated indices dim " + std::to_string(dim), Precision::Elementwise,
                                 [dim](Device d) {
                                   Tensor y = uniform(dim == 0 ? Shape{4, 3} : Shape{3, 4}, 13, d);  // added into
                                   backend_for(d).index_add(uniform(dim == 0 ? Shape{5, 3} : Shape{3, 5}, 12, d).view(), dim,
                                                            index_on(d, {1, 3, 1, 0, 1}).view(), y.view());
                                   return TensorList{y};
                                 }));
  }
}

// ---- the dense kernels on hand-picked geometries

struct ConvGeometry {
  const char* name;
  Shape x, w, y;
  ConvParams p;
};

std::vector<ConvGeometry> conv_geometries() {
  ConvParams plain, strided, dilated, grouped;
  strided.stride[0] = strided.stride[1] = 2;
  strided.padding[0] = strided.padding[1] = 1;
  dilated.dilation[0] = dilated.dilation[1] = 2;
  dilated.padding[0] = 2;
  dilated.padding[1] = 1;
  grouped.padding[0] = grouped.padding[1] = 1;
  grouped.groups = 4;  // r3gan's grouped 3x3 (Note [grouped convolution])
  return {{"3x3", Shape{2, 3, 7, 6}, Shape{4, 3, 3, 3}, Shape{2, 4, 5, 4}, plain},
          {"4x4 stride 2 pad 1", Shape{2, 3, 8, 8}, Shape{5, 3, 4, 4}, Shape{2, 5, 4, 4}, strided},
          {"3x3 dilated 2", Shape{1, 2, 9, 9}, Shape{3, 2, 3, 3}, Shape{1, 3, 9, 7}, dilated},
          {"3x3 groups 4", Shape{2, 32, 6, 6}, Shape{32, 8, 3, 3}, Shape{2, 32, 6, 6}, grouped}};
}

void dense_kernel_cases(Cases& cases) {
  const std::string g = "DenseKernels";
  for (const ConvGeometry& c : conv_geometries()) {
    for (bool with_bias : {false, true}) {
      cases.push_back(backend_case(g, std::string("conv2d_forward ") + c.name + (with_bias ? " + bias" : ""),
                                   Precision::Dense, [c, with_bias](Device d) {
                                     Tensor y = output(c.y, d);
                                     Tensor bias = with_bias ? uniform(Shape{c.w[0]}, 16, d) : Tensor();
                                     View bias_view;
                                     backend_for(d).conv2d_forward(uniform(c.x, 14, d).view(), uniform(c.w, 15, d).view(),
                                                                   view_or_null(bias, bias_view), c.p, y.view());
                                     return TensorList{y};
                                   }));
    }
    cases.push_back(backend_case(g, std::string("conv2d_backward_data ") + c.name, Precision::Dense, [c](Device d) {
      Tensor gx = output(c.x, d);
      backend_for(d).conv2d_backward_data(uniform(c.y, 19, d).view(), uniform(c.w, 18, d).view(), c.p, gx.view());
      return TensorList{gx};
    }));
    cases.push_back(backend_case(g, std::string("conv2d_backward_weights ") + c.name, Precision::Dense, [c](Device d) {
      Tensor gw = output(c.w, d);
      backend_for(d).conv2d_backward_weights(uniform(c.x, 17, d).view(), uniform(c.y, 19, d).view(), c.p, gw.view());
      return TensorList{gw};
    }));
  }
  const int64_t m = 7, k = 5, n = 6;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool with_bias : {false, true}) {
        cases.push_back(backend_case(g,
                                     std::string("matmul") + (ta ? " a^T" : "") + (tb ? " b^T" : "") + (with_bias ? " + bias" : ""),
                                     Precision::Dense, [=](Device d) {
                                       Tensor y = output(Shape{m, n}, d);
                                       Tensor bias = with_bias ? uniform(Shape{n}, 20, d) : Tensor();
                                       View bias_view;
                                       backend_for(d).matmul(uniform(ta ? Shape{k, m} : Shape{m, k}, 21, d).view(),
                                                             uniform(tb ? Shape{n, k} : Shape{k, n}, 22, d).view(), ta, tb,
                                                             view_or_null(bias, bias_view), y.view());
                                       return TensorList{y};
                                     }));
      }
  cases.push_back(backend_case(g, "matmul with an empty inner dimension gives the bias", Precision::Dense, [](Device d) {
    Tensor y = output(Shape{3, 2}, d), bias = values_on({1.5f, -2.f}, Shape{2}, d);
    View bias_view = bias.view();
    backend_for(d).matmul(values_on({}, Shape{3, 0}, d).view(), values_on({}, Shape{0, 2}, d).view(), false, false,
                          &bias_view, y.view());
    return TensorList{y};
  }));
  cases.push_back(backend_case(g, "matmul a^T b + bias on small integers", Precision::Dense, [](Device d) {
    std::vector<float> av(12), bv(8);
    for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) - 5.f;
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) * 0.25f;
    Tensor y = output(Shape{3, 2}, d), bias = values_on({0.5f, -1.f}, Shape{2}, d);
    View bias_view = bias.view();
    backend_for(d).matmul(values_on(av, Shape{4, 3}, d).view(), values_on(bv, Shape{4, 2}, d).view(), true, false,
                          &bias_view, y.view());
    return TensorList{y};
  }));
  // batch norm, plain and affine with LeakyReLU fused (Note [batch norm + activation]): the
  // training statistics, inference on them, and the backward
  for (Shape xs : {Shape{4, 3, 5, 5}, Shape{6, 3}}) {
    for (bool affine : {false, true}) {
      BatchNormActivation act;
      if (affine) act = {BatchNormActivation::Kind::LeakyRelu, 0.2f};
      const std::string what = xs.str() + (affine ? " affine, leaky relu fused" : "");
      // y, mean and var of training mode on `d`
      auto training = [xs, affine, act](Device d) {
        Tensor x = uniform(xs, 23, d, -1.f, 3.f), gamma = uniform(Shape{3}, 25, d, 0.5f, 1.5f), beta = uniform(Shape{3}, 26, d);
        Tensor y = output(xs, d), mean = output(Shape{3}, d), var = output(Shape{3}, d);
        View gv, bv;
        backend_for(d).batch_norm_forward_training(x.view(), affine ? view_or_null(gamma, gv) : nullptr,
                                                   affine ? view_or_null(beta, bv) : nullptr, 1e-5f, act, y.view(),
                                                   mean.view(), var.view());
        return TensorList{x, gamma, beta, y, mean, var};
      };
      cases.push_back(backend_case(g, "batch_norm training " + what, Precision::Dense, [training](Device d) {
        TensorList t = training(d);
        return TensorList{t[3], t[4], t[5]};
      }));
      cases.push_back(backend_case(g, "batch_norm inference " + what, Precision::Dense, [training, xs, affine](Device d) {
        TensorList t = training(d);
        Tensor yi = output(xs, d);
        View gv, bv;
        backend_for(d).batch_norm_forward_inference(t[0].view(), affine ? view_or_null(t[1], gv) : nullptr,
                                                    affine ? view_or_null(t[2], bv) : nullptr, t[4].view(), t[5].view(),
                                                    1e-5f, yi.view());
        return TensorList{yi};
      }));
      cases.push_back(backend_case(g, "batch_norm backward " + what, Precision::Dense, [training, xs, affine, act](Device d) {
        TensorList t = training(d);
        Tensor gx = output(xs, d), ggamma = output(Shape{3}, d), gbeta = output(Shape{3}, d);
        View gv, ggv, gbv, yv = t[3].view();
        backend_for(d).batch_norm_backward(t[0].view(), uniform(xs, 24, d).view(), t[4].view(), t[5].view(),
                                           affine ? view_or_null(t[1], gv) : nullptr, 1e-5f, act,
                                           act.enabled() ? &yv : nullptr, gx.view(),
                                           affine ? view_or_null(ggamma, ggv) : nullptr,
                                           affine ? view_or_null(gbeta, gbv) : nullptr);
        return affine ? TensorList{gx, ggamma, gbeta} : TensorList{gx};
      }));
    }
  }
  // pooling, each backend with its own workspace format
  PoolParams max_pad;
  max_pad.kernel[0] = max_pad.kernel[1] = 3;
  max_pad.stride[0] = max_pad.stride[1] = 2;
  max_pad.padding[0] = max_pad.padding[1] = 1;
  PoolParams avg_incl = max_pad, avg_excl = max_pad, max_plain;
  avg_incl.kind = avg_excl.kind = PoolKind::Avg;
  avg_excl.count_include_pad = false;
  struct Pool {
    PoolParams p;
    Shape ys;
    const char* what;
  };
  for (const Pool& c : {Pool{max_plain, Shape{2, 3, 3, 4}, "max 2x2"}, Pool{max_pad, Shape{2, 3, 4, 4}, "max 3x3 pad 1"},
                        Pool{avg_incl, Shape{2, 3, 4, 4}, "avg include pad"},
                        Pool{avg_excl, Shape{2, 3, 4, 4}, "avg exclude pad"}}) {
    // y and gx on `d`
    auto pool = [c](Device d) {
      const Shape xs{2, 3, 7, 8};
      Backend& b = backend_for(d);
      Tensor x = uniform(xs, 27, d), y = output(c.ys, d), gx = output(xs, d);
      const size_t bytes = b.pool_workspace_bytes(c.p, x.view(), y.view());
      Tensor workspace = bytes ? output(Shape{static_cast<int64_t>(bytes)}, d, DType::U8) : Tensor();
      View ws;
      b.pool2d_forward(c.p, x.view(), y.view(), view_or_null(workspace, ws));
      b.pool2d_backward(c.p, uniform(c.ys, 28, d).view(), view_or_null(workspace, ws), gx.view());
      return TensorList{y, gx};
    };
    cases.push_back(backend_case(g, std::string("pool forward ") + c.what, Precision::Elementwise,
                                 [pool](Device d) { return TensorList{pool(d)[0]}; }));
    cases.push_back(backend_case(g, std::string("pool backward ") + c.what, Precision::Elementwise,
                                 [pool](Device d) { return TensorList{pool(d)[1]}; }));
  }
}

// ---- the fused optimizer updates, three steps from zero state

void optimizer_cases(Cases& cases) {
  const std::string g = "Optimizers";
  constexpr int64_t kN = 5000;
  const Shape s{kN};
  for (bool amsgrad : {false, true}) {
    for (bool decoupled : {false, true}) {
      cases.push_back(backend_case(g, std::string("adam") + (amsgrad ? " amsgrad" : "") + (decoupled ? " (adamw)" : ""),
                                   Precision::Elementwise, [=](Device d) {
                                     Tensor p = uniform(s, 1, d), m = ops::zeros(s, d), v = ops::zeros(s, d),
                                            mx = ops::zeros(s, d);
                                     for (int step = 1; step <= 3; ++step) {
                                       AdamMath math{};
                                       const double lr = 1e-3, b1 = 0.9, b2 = 0.999, wd = 0.01;
                                       math.beta1 = float(b1);
                                       math.beta2 = float(b2);
                                       math.one_minus_beta1 = float(1.0 - b1);
                                       math.one_minus_beta2 = float(1.0 - b2);
                                       math.step_size = float(lr / (1.0 - std::pow(b1, step)));
                                       math.bc2_sqrt = float(std::sqrt(1.0 - std::pow(b2, step)));
                                       math.eps = 1e-8f;
                                       math.weight_decay = decoupled ? 0.f : float(wd);
                                       math.decoupled = decoupled ? float(1.0 - lr * wd) : 1.f;
                                       math.amsgrad = amsgrad;
                                       View mxv;
                                       backend_for(d).adam_update(math, p.view(), uniform(s, 10 + step, d).view(), m.view(),
                                                                  v.view(), amsgrad ? view_or_null(mx, mxv) : nullptr);
                                     }
                                     return amsgrad ? TensorList{p, m, v, mx} : TensorList{p, m, v};
                                   }));
    }
  }
  for (bool centered : {false, true}) {
    for (float momentum : {0.f, 0.9f}) {
      cases.push_back(backend_case(g, std::string("rmsprop") + (centered ? " centered" : "") + (momentum > 0.f ? " momentum" : ""),
                                   Precision::Elementwise, [=](Device d) {
                                     Tensor p = uniform(s, 2, d), sq = ops::zeros(s, d), avg = ops::zeros(s, d),
                                            buf = ops::zeros(s, d);
                                     const RmsPropMath math{0.01f, 0.99f, float(1.0 - 0.99), 1e-8f, 0.001f, momentum, centered};
                                     for (int step = 1; step <= 3; ++step) {
                                       View av, bv;
                                       backend_for(d).rmsprop_update(math, p.view(), uniform(s, 20 + step, d).view(), sq.view(),
                                                                     centered ? view_or_null(avg, av) : nullptr,
                                                                     momentum > 0.f ? view_or_null(buf, bv) : nullptr);
                                     }
                                     return TensorList{p, sq};
                                   }));
    }
  }
  cases.push_back(backend_case(g, "sgd nesterov momentum", Precision::Elementwise, [s](Device d) {
    Tensor p = uniform(s, 3, d), buf = ops::zeros(s, d);
    for (int step = 1; step <= 3; ++step) {
      const SgdMath math{0.1f, 0.9f, 1.f, 1e-4f, /*nesterov=*/true, /*first=*/step == 1};
      View bv;
      backend_for(d).sgd_update(math, p.view(), uniform(s, 30 + step, d).view(), view_or_null(buf, bv));
    }
    return TensorList{p, buf};
  }));
}

// ---- the core ops, differentiated by the harness

OpCase op(const std::string& group, std::string name, std::vector<Shape> shapes, Fn f, Order order = Order::Second,
          float lo = -1.f, float hi = 1.f) {
  return OpCase{group, std::move(name), std::move(shapes), std::move(f), order, Precision::Composite, lo, hi};
}

void elementwise_op_cases(Cases& cases) {
  const std::string g = "ElementwiseOps";
  const Shape s{3, 4};
  cases.push_back(op(g, "add broadcast", {Shape{3, 4}, Shape{4}}, [](const TensorList& x, Device) { return TensorList{x[0] + x[1]}; }, Order::First));
  cases.push_back(op(g, "sub broadcast", {Shape{2, 1, 4}, Shape{3, 1}}, [](const TensorList& x, Device) { return TensorList{x[0] - x[1]}; }, Order::First));
  cases.push_back(op(g, "mul", {s, s}, [](const TensorList& x, Device) { return TensorList{x[0] * x[1]}; }));
  cases.push_back(op(g, "div", {s, Shape{1, 4}}, [](const TensorList& x, Device) { return TensorList{x[0] / (ops::abs(x[1]) + 0.5f)}; }));
  cases.push_back(op(g, "maximum", {s, s}, [](const TensorList& x, Device) { return TensorList{ops::maximum(x[0] * x[0], x[1])}; }));
  cases.push_back(op(g, "minimum", {s, s}, [](const TensorList& x, Device) { return TensorList{ops::minimum(x[0] * x[0], x[1])}; }));
  cases.push_back(op(g, "scalars", {s}, [](const TensorList& x, Device) { return TensorList{ops::rsub(ops::mul(ops::add(x[0], 2.f), 3.f), 1.f)}; }, Order::First));
  cases.push_back(op(g, "neg", {s}, [](const TensorList& x, Device) { return TensorList{ops::neg(x[0]) * x[0]}; }));
  cases.push_back(op(g, "pow", {s}, [](const TensorList& x, Device) { return TensorList{ops::pow(x[0], 2.5f)}; }, Order::Second, 0.2f, 2.f));
  cases.push_back(op(g, "sqrt", {s}, [](const TensorList& x, Device) { return TensorList{ops::sqrt(x[0])}; }, Order::Second, 0.2f, 2.f));
  cases.push_back(op(g, "rsqrt", {s}, [](const TensorList& x, Device) { return TensorList{ops::rsqrt(x[0])}; }, Order::Second, 0.2f, 2.f));
  cases.push_back(op(g, "square", {s}, [](const TensorList& x, Device) { return TensorList{ops::square(x[0])}; }));
  cases.push_back(op(g, "reciprocal", {s}, [](const TensorList& x, Device) { return TensorList{ops::reciprocal(x[0])}; }, Order::Second, 0.5f, 2.f));
  cases.push_back(op(g, "exp", {s}, [](const TensorList& x, Device) { return TensorList{ops::exp(x[0])}; }));
  cases.push_back(op(g, "log", {s}, [](const TensorList& x, Device) { return TensorList{ops::log(x[0])}; }, Order::Second, 0.2f, 3.f));
  cases.push_back(op(g, "abs", {s}, [](const TensorList& x, Device) { return TensorList{ops::abs(x[0]) * x[0]}; }));
  cases.push_back(op(g, "sign", {s}, [](const TensorList& x, Device) { return TensorList{ops::sign(x[0]) * x[0] * x[0]}; }));
  cases.push_back(op(g, "clamp", {s}, [](const TensorList& x, Device) { return TensorList{ops::clamp(x[0], -0.5f, 0.5f) * x[0]}; }));
  cases.push_back(op(g, "relu", {s}, [](const TensorList& x, Device) { return TensorList{ops::relu(x[0]) * x[0]}; }));
  cases.push_back(op(g, "leaky_relu", {s}, [](const TensorList& x, Device) { return TensorList{ops::leaky_relu(x[0], 0.2f) * x[0]}; }));
  cases.push_back(op(g, "tanh", {s}, [](const TensorList& x, Device) { return TensorList{ops::tanh(x[0])}; }));
  cases.push_back(op(g, "sigmoid", {s}, [](const TensorList& x, Device) { return TensorList{ops::sigmoid(x[0])}; }));
  cases.push_back(op(g, "softplus", {s}, [](const TensorList& x, Device) { return TensorList{ops::softplus(x[0])}; }));
  // x spread over [-4, 4], where their derivatives' functors and the composed third ones all bend
  cases.push_back(op(g, "silu", {s}, [](const TensorList& x, Device) { return TensorList{ops::silu(x[0] * 4.f)}; }));
  cases.push_back(op(g, "gelu_tanh", {s}, [](const TensorList& x, Device) { return TensorList{ops::gelu_tanh(x[0] * 4.f)}; }));
  cases.push_back(op(g, "where", {s, s}, [](const TensorList& x, Device) { return TensorList{ops::where(ops::gt(x[0], x[1]), x[0] * x[1], x[1])}; }));
  cases.push_back(op(g, "comparisons", {s, s}, [](const TensorList& x, Device) {
    return TensorList{ops::gt(x[0], x[1]) + ops::lt(x[0], x[1]) * 2.f + ops::ge(x[0], 0.f * x[1]) * 4.f +
                      ops::le(x[0], x[1]) * 8.f + ops::eq(x[0], x[0]) * 16.f + ops::gt(x[0], 0.25f) * 32.f};
  }, Order::Forward));
}

// core/ops/in_place.h: the same writes on every backend
void in_place_cases(Cases& cases) {
  const std::string g = "InPlaceOps";
  for (double weight : {0.0, 0.25, 0.5, 0.9, 1.0}) {
    OpCase c = backend_case(g, "lerp_, mul_, add_ at weight " + str(weight), Precision::Elementwise, [weight](Device d) {
      Tensor t = uniform(Shape{37}, 400, d);
      const Tensor end = uniform(Shape{37}, 401, d);
      ops::lerp_(t, end, weight);
      ops::mul_(t, 3.f);
      ops::add_(t, end);
      return TensorList{t};
    });
    cases.push_back(c);
  }
  cases.push_back(backend_case(g, "fill_", Precision::Exact, [](Device d) {
    Tensor t = ops::zeros(Shape{5}, d);
    ops::fill_(t, 2.5);
    return TensorList{t};
  }));
  cases.push_back(backend_case(g, "copy_ from the host", Precision::Exact, [](Device d) {
    Tensor t = ops::zeros(Shape{3}, d);
    ops::copy_(t, ops::from_vector(std::vector<float>{1.f, 2.f, 3.f}, Shape{3}));
    return TensorList{t};
  }));
}

void reduction_op_cases(Cases& cases) {
  const std::string g = "ReductionOps";
  const Shape s{2, 3, 4};
  cases.push_back(op(g, "sum all", {s}, [](const TensorList& x, Device) { return TensorList{ops::sum(x[0] * x[0])}; }));
  cases.push_back(op(g, "sum dims keepdim", {s}, [](const TensorList& x, Device) { return TensorList{ops::sum(x[0] * x[0], {0, 2}, true)}; }));
  cases.push_back(op(g, "mean", {s}, [](const TensorList& x, Device) { return TensorList{ops::mean(ops::exp(x[0]), {1})}; }));
  cases.push_back(op(g, "amax", {s}, [](const TensorList& x, Device) { return TensorList{ops::amax(x[0], {2})}; }, Order::Forward));
  cases.push_back(op(g, "norm_per_example", {s}, [](const TensorList& x, Device) { return TensorList{ops::norm_per_example(x[0], 1e-6f)}; }));
  cases.push_back(op(g, "logsumexp", {s}, [](const TensorList& x, Device) { return TensorList{ops::logsumexp(x[0], 1)}; }));
  cases.push_back(op(g, "sum_to", {s}, [](const TensorList& x, Device) { return TensorList{ops::sum_to(x[0] * x[0], Shape{3, 1})}; }));
}

void shape_op_cases(Cases& cases) {
  const std::string g = "ShapeAndIndexingOps";
  const Shape s{2, 3, 4};
  cases.push_back(op(g, "reshape flatten", {s}, [](const TensorList& x, Device) { return TensorList{ops::flatten(ops::reshape(x[0] * x[0], Shape{6, 4}), 0)}; }));
  cases.push_back(op(g, "permute", {s}, [](const TensorList& x, Device) { return TensorList{ops::permute(x[0] * x[0], {2, 0, 1})}; }));
  cases.push_back(op(g, "transpose", {s}, [](const TensorList& x, Device) { return TensorList{ops::transpose(x[0] * x[0], 0, 2)}; }));
  cases.push_back(op(g, "expand", {Shape{3, 1}}, [](const TensorList& x, Device) { return TensorList{ops::expand(x[0] * x[0], Shape{2, 3, 4})}; }));
  cases.push_back(op(g, "concat", {s, Shape{2, 1, 4}}, [](const TensorList& x, Device) { return TensorList{ops::concat({x[0] * x[0], x[1]}, 1)}; }));
  cases.push_back(op(g, "slice", {s}, [](const TensorList& x, Device) { return TensorList{ops::slice(x[0] * x[0], 2, 1, 3)}; }));
  cases.push_back(op(g, "split", {s}, [](const TensorList& x, Device) {
    TensorList parts = ops::split(x[0] * x[0], {1, 3}, 2);
    return TensorList{ops::concat({parts[1], parts[0] * 2.f}, 2)};
  }));
  cases.push_back(op(g, "pad", {Shape{2, 3, 4, 5}}, [](const TensorList& x, Device) { return TensorList{ops::pad(x[0] * x[0], {1, 2, 0, 1}, 0.5f)}; }));
  cases.push_back(op(g, "index_select", {s}, [](const TensorList& x, Device d) { return TensorList{ops::index_select(x[0] * x[0], 1, index_on(d, {2, 0, 2}))}; }));
  cases.push_back(op(g, "index_add", {Shape{4, 3}, Shape{5, 3}}, [](const TensorList& x, Device d) {
    return TensorList{ops::index_add(x[0] * x[0], 0, index_on(d, {1, 3, 1, 0, 1}), x[1] * x[1])};
  }));
  cases.push_back(op(g, "embedding", {Shape{5, 3}}, [](const TensorList& x, Device d) {
    return TensorList{ops::embedding(x[0] * x[0], indices_on({4, 0, 4, 2}, Shape{2, 2}, d))};
  }));
  cases.push_back(op(g, "one_hot", {}, [](const TensorList&, Device d) { return TensorList{ops::one_hot(index_on(d, {2, 0, 3}), 4)}; }, Order::Forward));
  cases.push_back(op(g, "upsample_nearest2d", {Shape{1, 2, 3, 3}}, [](const TensorList& x, Device) { return TensorList{ops::upsample_nearest2d(x[0] * x[0], 2)}; }));
}

void dense_op_cases(Cases& cases) {
  const std::string g = "DenseOps";
  cases.push_back(op(g, "conv2d", {Shape{2, 3, 6, 6}, Shape{4, 3, 3, 3}, Shape{4}}, [](const TensorList& x, Device) {
    return TensorList{ops::conv2d(x[0], x[1], x[2], ops::Conv2dOptions::make(2, 1))};
  }));
  cases.push_back(op(g, "conv2d dilated", {Shape{1, 2, 7, 7}, Shape{3, 2, 3, 3}}, [](const TensorList& x, Device) {
    return TensorList{ops::conv2d(x[0], x[1], {}, ops::Conv2dOptions::make(1, 2, 2))};
  }));
  cases.push_back(op(g, "conv_transpose2d", {Shape{2, 4, 3, 3}, Shape{4, 3, 4, 4}, Shape{3}}, [](const TensorList& x, Device) {
    return TensorList{ops::conv_transpose2d(x[0], x[1], x[2], ops::Conv2dOptions::make(2, 1))};
  }));
  cases.push_back(op(g, "conv2d groups 3", {Shape{2, 6, 5, 5}, Shape{9, 2, 3, 3}, Shape{9}}, [](const TensorList& x, Device) {
    ops::Conv2dOptions options = ops::Conv2dOptions::make(1, 1);
    options.groups = 3;
    return TensorList{ops::conv2d(x[0], x[1], x[2], options)};
  }));
  cases.push_back(op(g, "conv_transpose2d groups 2", {Shape{1, 4, 3, 3}, Shape{4, 3, 4, 4}}, [](const TensorList& x, Device) {
    ops::Conv2dOptions options = ops::Conv2dOptions::make(2, 1);
    options.groups = 2;
    return TensorList{ops::conv_transpose2d(x[0], x[1], {}, options)};
  }));
  cases.push_back(op(g, "conv_transpose2d output_padding", {Shape{1, 2, 3, 3}, Shape{2, 2, 3, 3}}, [](const TensorList& x, Device) {
    return TensorList{ops::conv_transpose2d(x[0], x[1], {}, ops::Conv2dOptions::make(2, 1, 1, 1))};
  }));
  cases.push_back(op(g, "matmul", {Shape{4, 5}, Shape{6, 5}}, [](const TensorList& x, Device) { return TensorList{ops::matmul(x[0], x[1], false, true)}; }));
  cases.push_back(op(g, "matmul transposed a", {Shape{5, 4}, Shape{5, 3}}, [](const TensorList& x, Device) { return TensorList{ops::matmul(x[0], x[1], true, false)}; }));
  cases.push_back(op(g, "linear", {Shape{3, 5}, Shape{2, 5}, Shape{2}}, [](const TensorList& x, Device) { return TensorList{ops::linear(x[0], x[1], x[2])}; }));
  cases.push_back(op(g, "layer_norm", {Shape{3, 2, 4}, Shape{2, 4}, Shape{2, 4}}, [](const TensorList& x, Device) {
    return TensorList{ops::layer_norm(x[0], x[1], x[2], 2)};
  }));
  cases.push_back(op(g, "batch_norm eval", {Shape{4, 3, 2, 2}, Shape{3}, Shape{3}}, [](const TensorList& x, Device d) {
    Tensor rm = values_on({0.1f, -0.2f, 0.3f}, Shape{3}, d), rv = values_on({1.5f, 0.5f, 2.f}, Shape{3}, d);
    return TensorList{ops::batch_norm(x[0], x[1], x[2], rm, rv, /*training=*/false)};
  }));
  // training-mode batch norm and max pooling say they have no double backward (engine.md)
  cases.push_back(op(g, "batch_norm training", {Shape{4, 3, 2, 2}, Shape{3}, Shape{3}}, [](const TensorList& x, Device d) {
    Tensor rm = ops::zeros(Shape{3}, d), rv = ops::ones(Shape{3}, d);
    Tensor y = ops::batch_norm(x[0], x[1], x[2], rm, rv, /*training=*/true);
    return TensorList{ops::concat({ops::flatten(y, 0), rm, rv}, 0)};  // running stats updated in place
  }, Order::First));
  cases.push_back(op(g, "avg_pool2d", {Shape{2, 2, 5, 5}}, [](const TensorList& x, Device) { return TensorList{ops::avg_pool2d(x[0] * x[0], 3, 2, 1)}; }));
  cases.push_back(op(g, "max_pool2d", {Shape{2, 2, 5, 5}}, [](const TensorList& x, Device) { return TensorList{ops::max_pool2d(x[0], 3, 2, 1)}; }, Order::First));
  // the FID Inception's pools and its resize to 299 (up, down and mixed sizes)
  cases.push_back(op(g, "avg_pool2d exclude pad", {Shape{2, 2, 5, 6}}, [](const TensorList& x, Device) {
    return TensorList{ops::avg_pool2d(x[0] * x[0], 3, 1, 1, /*count_include_pad=*/false)};
  }));
  cases.push_back(op(g, "max_pool2d k3 s1 p1", {Shape{2, 2, 5, 6}}, [](const TensorList& x, Device) { return TensorList{ops::max_pool2d(x[0], 3, 1, 1)}; }, Order::First));
  cases.push_back(op(g, "resize_bilinear up", {Shape{2, 2, 4, 5}}, [](const TensorList& x, Device) { return TensorList{ops::resize_bilinear(x[0] * x[0], 9, 13)}; }));
  cases.push_back(op(g, "resize_bilinear down", {Shape{1, 3, 11, 8}}, [](const TensorList& x, Device) { return TensorList{ops::resize_bilinear(x[0] * x[0], 4, 5)}; }));
  cases.push_back(op(g, "resize_bilinear mixed", {Shape{1, 1, 3, 17}}, [](const TensorList& x, Device) { return TensorList{ops::resize_bilinear(x[0] * x[0], 7, 6)}; }));
}

void loss_op_cases(Cases& cases) {
  const std::string g = "LossesAndDropout";
  cases.push_back(op(g, "bce_with_logits", {Shape{6}, Shape{6}}, [](const TensorList& x, Device) {
    return TensorList{ops::bce_with_logits(x[0] * 3.f, ops::sigmoid(x[1]))};
  }));
  cases.push_back(op(g, "bce_with_logits none", {Shape{2, 3}, Shape{2, 3}}, [](const TensorList& x, Device) {
    return TensorList{ops::bce_with_logits(x[0], ops::sigmoid(x[1]), ops::Reduction::None)};
  }));
  cases.push_back(op(g, "cross_entropy", {Shape{4, 5}}, [](const TensorList& x, Device d) {
    return TensorList{ops::cross_entropy(x[0] * 2.f, index_on(d, {1, 4, 0, 1}), ops::Reduction::Sum)};
  }));
  cases.push_back(op(g, "log_softmax", {Shape{3, 5}}, [](const TensorList& x, Device) { return TensorList{ops::log_softmax(x[0], 1)}; }));
  cases.push_back(op(g, "mse_loss", {Shape{3, 4}, Shape{3, 4}}, [](const TensorList& x, Device) { return TensorList{ops::mse_loss(x[0], x[1])}; }));
  cases.push_back(op(g, "dropout", {Shape{4, 8}}, [](const TensorList& x, Device) {
    return TensorList{ops::dropout(x[0] * x[0], 0.3f, RngKey{5, stream_id(1)}, 11)};
  }));
  cases.push_back(op(g, "randn rand", {Shape{3, 4}}, [](const TensorList& x, Device d) {
    return TensorList{x[0] * ops::randn(Shape{3, 4}, RngKey{6, 7}, 3, d) + ops::rand(Shape{4}, RngKey{6, 8}, 0, d)};
  }, Order::First));
  cases.push_back(op(g, "factories", {}, [](const TensorList&, Device d) {
    return TensorList{ops::concat({ops::arange(0, 5, 1, d), ops::full(Shape{2}, 2.5, d), ops::ones(Shape{1}, d), ops::zeros(Shape{1}, d)}, 0)};
  }, Order::Forward));
}

// ---- softmax and log-softmax: the two kernels on row lengths below, at and above a warp and
// with one column, on inputs out to +-80 (their maximum subtracted, nothing overflows); then the
// core ops to second order, along the last and a middle dimension and inside attention

void softmax_cases(Cases& cases) {
  const std::string g = "Softmax";
  struct Rows {
    Shape shape;
    float range;
  };
  for (SoftmaxKind kind : {SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax}) {
    const std::string name = kind == SoftmaxKind::Softmax ? "softmax " : "log_softmax ";
    for (const Rows& r : {Rows{Shape{7, 5}, 2.f}, Rows{Shape{2, 3, 32}, 2.f}, Rows{Shape{3, 1000}, 4.f},
                          Rows{Shape{4, 1}, 2.f}, Rows{Shape{6, 45}, 80.f}}) {
      // y on `d` and, when asked, the backward of a gradient gy
      auto run = [kind, r](Device d, bool backward) {
        Tensor y = output(r.shape, d);
        backend_for(d).softmax(uniform(r.shape, 40, d, -r.range, r.range).view(), kind, y.view());
        if (!backward) return y;
        Tensor gx = output(r.shape, d);
        backend_for(d).softmax_backward(y.view(), uniform(r.shape, 41, d).view(), kind, gx.view());
        return gx;
      };
      const std::string what = r.shape.str() + " in +-" + str(r.range);
      cases.push_back(backend_case(g, name + what, Precision::Reduction, [run](Device d) { return TensorList{run(d, false)}; }));
      cases.push_back(backend_case(g, name + "backward " + what, Precision::Reduction,
                                   [run](Device d) { return TensorList{run(d, true)}; }));
    }
  }
  cases.push_back(op(g, "softmax last dim", {Shape{3, 4, 5}}, [](const TensorList& x, Device) { return TensorList{ops::softmax(x[0] * 2.f)}; }));
  cases.push_back(op(g, "softmax middle dim", {Shape{2, 3, 4}}, [](const TensorList& x, Device) { return TensorList{ops::softmax(x[0] * 2.f, 1)}; }));
  cases.push_back(op(g, "log_softmax last dim", {Shape{4, 6}}, [](const TensorList& x, Device) { return TensorList{ops::log_softmax(x[0] * 2.f)}; }));
  cases.push_back(op(g, "log_softmax first dim", {Shape{4, 6}}, [](const TensorList& x, Device) { return TensorList{ops::log_softmax(x[0] * 2.f, 0)}; }));
  // one head of attention: softmax(q k^T / sqrt(d)) v, q and k (L, d), v (L, dv)
  cases.push_back(op(g, "attention", {Shape{5, 4}, Shape{5, 4}, Shape{5, 3}}, [](const TensorList& x, Device) {
    return TensorList{ops::matmul(ops::softmax(ops::matmul(x[0], x[1], false, true) * 0.5f), x[2])};
  }));
}

// ---- batched matmul, scaled dot-product attention and 2-D RoPE: the bmm kernel for every
// transpose and an empty inner dimension, then the core ops to second order (attention's first
// order through its blocked backward, the second through the create_graph one, Note [attention
// backward]), and attention over several blocks of query rows to first order

void attention_cases(Cases& cases) {
  const std::string g = "Attention";
  const int64_t batch = 3, m = 7, k = 5, n = 6;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      cases.push_back(backend_case(g, std::string("bmm") + (ta ? " a^T" : "") + (tb ? " b^T" : ""), Precision::Dense,
                                   [=](Device d) {
                                     Tensor y = output(Shape{batch, m, n}, d);
                                     backend_for(d).bmm(uniform(ta ? Shape{batch, k, m} : Shape{batch, m, k}, 23, d).view(),
                                                        uniform(tb ? Shape{batch, n, k} : Shape{batch, k, n}, 24, d).view(),
                                                        ta, tb, y.view());
                                     return TensorList{y};
                                   }));
  cases.push_back(backend_case(g, "bmm with an empty inner dimension gives zeros", Precision::Dense, [](Device d) {
    Tensor y = output(Shape{2, 3, 2}, d);
    backend_for(d).bmm(values_on({}, Shape{2, 3, 0}, d).view(), values_on({}, Shape{2, 0, 2}, d).view(), false, false,
                       y.view());
    return TensorList{y};
  }));
  cases.push_back(op(g, "ops::bmm b^T", {Shape{2, 4, 5}, Shape{2, 6, 5}}, [](const TensorList& x, Device) {
    return TensorList{ops::bmm(x[0], x[1], false, true) * ops::bmm(x[0], x[1], false, true)};
  }));
  cases.push_back(op(g, "ops::bmm a^T", {Shape{2, 5, 4}, Shape{2, 5, 3}}, [](const TensorList& x, Device) {
    return TensorList{ops::tanh(ops::bmm(x[0], x[1], true, false))};
  }));
  cases.push_back(op(g, "scaled_dot_product_attention", {Shape{2, 2, 3, 4}, Shape{2, 2, 5, 4}, Shape{2, 2, 5, 3}},
                     [](const TensorList& x, Device) {
                       return TensorList{ops::scaled_dot_product_attention(x[0] * 2.f, x[1] * 2.f, x[2])};
                     }));
  cases.push_back(op(g, "scaled_dot_product_attention blocks of query rows", {Shape{4, 16, 40, 8}, Shape{4, 16, 1024, 8}, Shape{4, 16, 1024, 8}},
                     [](const TensorList& x, Device) {
                       return TensorList{ops::scaled_dot_product_attention(x[0], x[1] * 2.f, x[2], 0.5f)};
                     }, Order::First));
  cases.push_back(op(g, "rope_2d", {Shape{2, 2, 6, 8}}, [](const TensorList& x, Device) {
    return TensorList{ops::rope_2d(x[0], 2, 3) * x[0]};
  }));
}

// upfirdn2d (Note [upfirdn2d]), translate2d and grid_sample: the augmentation and StyleGAN2
// resampling ops
void resampling_op_cases(Cases& cases) {
  const std::string g = "ResamplingOps";
  auto filter = [](Device d) { return values_on({0.1f, 0.4f, -0.3f, 0.8f, 0.5f, 0.2f}, Shape{3, 2}, d); };
  cases.push_back(op(g, "upsample2d [1,3,3,1]", {Shape{2, 3, 5, 4}}, [](const TensorList& x, Device d) {
    return TensorList{ops::upsample2d(x[0] * x[0], ops::fir_filter({1, 3, 3, 1}, d), 2)};
  }));
  cases.push_back(op(g, "downsample2d [1,3,3,1]", {Shape{2, 2, 8, 6}}, [](const TensorList& x, Device d) {
    return TensorList{ops::downsample2d(x[0] * x[0], ops::fir_filter({1, 3, 3, 1}, d), 2)};
  }));
  cases.push_back(op(g, "upfirdn2d up 2 down 3 crop", {Shape{1, 2, 6, 7}}, [=](const TensorList& x, Device d) {
    const ops::UpFirDn2dOptions o{.up = 2, .down = 3, .pad_x0 = 1, .pad_x1 = -1, .pad_y0 = 2, .pad_y1 = 0, .gain = 1.5f};
    return TensorList{ops::upfirdn2d(x[0] * x[0], filter(d), o)};
  }));
  cases.push_back(op(g, "upfirdn2d flip negative pads", {Shape{2, 1, 5, 5}}, [=](const TensorList& x, Device d) {
    const ops::UpFirDn2dOptions o{.pad_x0 = -1, .pad_x1 = 2, .pad_y0 = 1, .pad_y1 = -1, .flip_filter = true, .gain = 1.5f};
    return TensorList{ops::upfirdn2d(x[0] * x[0], filter(d), o)};
  }));
  OpCase translate = op(g, "translate2d", {Shape{3, 2, 7, 9}}, [](const TensorList& x, Device d) {
    return TensorList{ops::translate2d(x[0] * x[0], indices_on({1, -2, 0, 0, -4, 9}, Shape{3, 2}, d))};
  });
  translate.precision = Precision::Elementwise;
  cases.push_back(translate);
  // an output larger than the input (taps shared, so the adjoint's atomics collide); the grid is
  // differentiated once (Note [grid_sample]), x twice
  for (GridPadding padding : {GridPadding::kZeros, GridPadding::kReflection}) {
    OpCase c = op(g, padding == GridPadding::kZeros ? "grid_sample zeros" : "grid_sample reflection",
                  {Shape{3, 2, 7, 9}, Shape{3, 11, 13, 2}}, [padding](const TensorList& x, Device) {
                    return TensorList{ops::grid_sample(x[0] * x[0], x[1] * 1.8f, padding)};
                  });
    c.precision = Precision::Sampling;
    c.twice = 1;
    cases.push_back(c);
  }
}

// ---- transformer blocks (issue 45, after GAT): rms_norm, swiglu, the patch token layout and
// the layers made of them, composed of core ops and differentiated to second order

void transformer_op_cases(Cases& cases) {
  const std::string g = "TransformerOps";
  cases.push_back(op(g, "rms_norm weight", {Shape{2, 3, 8}, Shape{8}}, [](const TensorList& x, Device) {
    return TensorList{ops::rms_norm(x[0] * 2.f, x[1])};
  }));
  cases.push_back(op(g, "rms_norm no weight, 64 features", {Shape{5, 64}}, [](const TensorList& x, Device) {
    return TensorList{ops::rms_norm(x[0], {}, 1e-5f)};
  }));
  cases.push_back(op(g, "swiglu", {Shape{3, 4}, Shape{3, 4}}, [](const TensorList& x, Device) {
    return TensorList{ops::swiglu(x[0] * 4.f, x[1])};
  }));
  cases.push_back(op(g, "swiglu feed-forward", {Shape{6, 4}, Shape{8, 4}, Shape{8, 4}, Shape{4, 8}}, [](const TensorList& x, Device) {
    return TensorList{ops::linear(ops::swiglu(ops::linear(x[0], x[1]), ops::linear(x[0], x[2])), x[3])};
  }));
  cases.push_back(op(g, "patchify p 2", {Shape{2, 3, 4, 6}}, [](const TensorList& x, Device) { return TensorList{ops::patchify(x[0] * x[0], 2)}; }));
  cases.push_back(op(g, "unpatchify p 2", {Shape{2, 6, 12}}, [](const TensorList& x, Device) {
    return TensorList{ops::unpatchify(x[0] * x[0], 3, 4, 6, 2)};
  }));
  // PatchEmbed (conv kernel p stride p read as tokens), RMSNorm, a linear head and unpatchify
  cases.push_back(op(g, "patch embed to image", {Shape{2, 3, 8, 8}, Shape{6, 3, 4, 4}, Shape{6}, Shape{6}, Shape{48, 6}},
                     [](const TensorList& x, Device) {
    Tensor grid = ops::conv2d(x[0], x[1], x[2], ops::Conv2dOptions::make(4, 0));  // (2, 6, 2, 2)
    Tensor tokens = ops::reshape(ops::transpose(ops::flatten(grid, 2), 1, 2), Shape{8, 6});
    Tensor out = ops::linear(ops::rms_norm(tokens, x[3]), x[4]);  // (8, 3 * 4 * 4)
    return TensorList{ops::unpatchify(ops::reshape(out, Shape{2, 4, 48}), 3, 8, 8, 4)};
  }));
}

Cases all_cases() {
  Cases cases;
  memory_cases(cases);
  elementwise_cases(cases);
  reduction_cases(cases);
  indexing_cases(cases);
  dense_kernel_cases(cases);
  optimizer_cases(cases);
  elementwise_op_cases(cases);
  in_place_cases(cases);
  reduction_op_cases(cases);
  shape_op_cases(cases);
  dense_op_cases(cases);
  loss_op_cases(cases);
  softmax_cases(cases);
  attention_cases(cases);
  resampling_op_cases(cases);
  transformer_op_cases(cases);
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = all_cases();
  return cases;
}

}  // namespace gantry::testing
