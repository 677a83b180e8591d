// Every op of core/ops on cuda:0 against the CPU: forward, backward and (where the op supports
// it) double backward, with the CUDA allocator filling every new block with NaN so an output a
// kernel does not write fails. Skipped without a CUDA device.
//
// Adding an op (grid_sample is a complete example; `git grep -l grid_sample` lists its files):
//  1. core/ops/ops.h declares it; core/ops/<op>.cpp validates shapes (errors name the op and both
//     shapes) and records an autograd node whose backward is written with differentiable ops, so
//     double backward works (Note [second derivatives of convolution]).
//  2. backend/backend.h gets the kernel's virtual function; math shared by both devices goes in a
//     __host__ __device__ header (backend/functors.h, or backend/<op>_math.h).
//  3. backend/cpu/: the CPU kernel (cpu_backend.h + <op>.cpp, oneDNN or an OpenMP loop); a naive
//     oracle in backend/cpu/reference/ if the kernel is not obviously right.
//  4. backend/cuda/: the declaration in cuda_backend.h, the launch in <op>.cpp, the kernel in
//     <op>.cu (kernels.h lists the launchers); every launch on the device's compute stream.
//  5. Tests: tests/gradcheck/test_<op>_grad.cpp (first and second order), a golden file from
//     PyTorch (tests/golden/make_<op>_golden.py + test_golden_<op>.cpp), and a case in the
//     table below (or its own tests/gpu/test_<op>_parity.cpp), which runs on the next GPU check
//     (scripts/device_check).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"

namespace gantry::gputest {
namespace {

using ops::TensorList;
using OpFn = std::function<Tensor(const TensorList& inputs, Device device)>;

enum class Order { Forward, First, Second };

struct OpCase {
  std::string name;
  std::vector<Shape> shapes;  // f32 inputs, leaves that require grad (unless Forward)
  OpFn f;
  Order order = Order::Second;
  float lo = -1.f, hi = 1.f;  // input range
};

struct Results {
  Tensor y;
  TensorList grads, grad_grads;
};

// f at inputs drawn from the same Philox stream on `device`; then the gradient of
// sum(y * w) and the gradient of sum_i sum(grad_i * v_i), for fixed random w and v_i.
Results evaluate(const OpCase& c, Device device) {
  TensorList in;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    Tensor t = ops::from_vector(values(c.shapes[i].numel(), 100 + i, c.lo, c.hi), c.shapes[i],
                                device);
    if (c.order != Order::Forward) t.set_requires_grad(true);
    in.push_back(t);
  }
  Results r;
  r.y = c.f(in, device);
  if (c.order == Order::Forward) return r;
  Tensor w = ops::from_vector(values(r.y.numel(), 200), r.y.shape(), device);
  Tensor loss = ops::sum(r.y * w);
  const bool second = c.order == Order::Second;
  r.grads = autograd::grad({loss}, in, {}, /*retain_graph=*/second, /*create_graph=*/second,
                           /*allow_unused=*/true);
  if (!second) return r;
  Tensor s;
  for (size_t i = 0; i < r.grads.size(); ++i) {
    if (!r.grads[i].defined() || !r.grads[i].requires_grad()) continue;
    Tensor v = ops::from_vector(values(r.grads[i].numel(), 300 + i), r.grads[i].shape(), device);
    Tensor term = ops::sum(r.grads[i] * v);
    s = s.defined() ? s + term : term;
  }
  if (s.defined()) r.grad_grads = autograd::grad({s}, in, {}, false, false, true);
  return r;
}

void expect_parity(const OpCase& c) {
  SCOPED_TRACE(c.name);
  Results cpu = evaluate(c, Device::cpu());
  Results gpu;
  {
    NanFilledAllocations nan_fill;
    gpu = evaluate(c, Device::cuda(0));
  }
  const Tolerance forward{1e-4, 1e-4}, first{1e-4, 1e-3}, second{2e-4, 2e-3};
  EXPECT_TRUE(all_close(gpu.y, cpu.y, forward, c.name + " forward"));
  ASSERT_EQ(gpu.grads.size(), cpu.grads.size());
  for (size_t i = 0; i < cpu.grads.size(); ++i) {
    ASSERT_EQ(gpu.grads[i].defined(), cpu.grads[i].defined()) << c.name << " grad " << i;
    if (cpu.grads[i].defined()) {
      EXPECT_TRUE(all_close(gpu.grads[i], cpu.grads[i], first,
                            c.name + " d/d input " + std::to_string(i)));
    }
  }
  if (c.order == Order::Second) {
    ASSERT_FALSE(cpu.grad_grads.empty()) << c.name << ": no second derivative on the CPU";
  }
  ASSERT_EQ(gpu.grad_grads.size(), cpu.grad_grads.size());
  for (size_t i = 0; i < cpu.grad_grads.size(); ++i) {
    ASSERT_EQ(gpu.grad_grads[i].defined(), cpu.grad_grads[i].defined());
    if (cpu.grad_grads[i].defined()) {
      EXPECT_TRUE(all_close(gpu.grad_grads[i], cpu.grad_grads[i], second,
                            c.name + " second derivative " + std::to_string(i)));
    }
  }
}

Tensor index_on(Device d, std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ops::from_vector(v, Shape{n}, d);
}

class OpsParity : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

TEST_F(OpsParity, ElementwiseOps) {
  const Shape s{3, 4};
  const std::vector<OpCase> cases = {
      {"add broadcast", {Shape{3, 4}, Shape{4}}, [](const TensorList& x, Device) { return x[0] + x[1]; }, Order::First},
      {"sub broadcast", {Shape{2, 1, 4}, Shape{3, 1}}, [](const TensorList& x, Device) { return x[0] - x[1]; }, Order::First},
      {"mul", {s, s}, [](const TensorList& x, Device) { return x[0] * x[1]; }},
      {"div", {s, Shape{1, 4}}, [](const TensorList& x, Device) { return x[0] / (ops::abs(x[1]) + 0.5f); }},
      {"maximum", {s, s}, [](const TensorList& x, Device) { return ops::maximum(x[0] * x[0], x[1]); }},
      {"minimum", {s, s}, [](const TensorList& x, Device) { return ops::minimum(x[0] * x[0], x[1]); }},
      {"scalars", {s}, [](const TensorList& x, Device) { return ops::rsub(ops::mul(ops::add(x[0], 2.f), 3.f), 1.f); }, Order::First},
      {"neg", {s}, [](const TensorList& x, Device) { return ops::neg(x[0]) * x[0]; }},
      {"pow", {s}, [](const TensorList& x, Device) { return ops::pow(x[0], 2.5f); }, Order::Second, 0.2f, 2.f},
      {"sqrt", {s}, [](const TensorList& x, Device) { return ops::sqrt(x[0]); }, Order::Second, 0.2f, 2.f},
      {"rsqrt", {s}, [](const TensorList& x, Device) { return ops::rsqrt(x[0]); }, Order::Second, 0.2f, 2.f},
      {"square", {s}, [](const TensorList& x, Device) { return ops::square(x[0]); }},
      {"reciprocal", {s}, [](const TensorList& x, Device) { return ops::reciprocal(x[0]); }, Order::Second, 0.5f, 2.f},
      {"exp", {s}, [](const TensorList& x, Device) { return ops::exp(x[0]); }},
      {"log", {s}, [](const TensorList& x, Device) { return ops::log(x[0]); }, Order::Second, 0.2f, 3.f},
      {"abs", {s}, [](const TensorList& x, Device) { return ops::abs(x[0]) * x[0]; }},
      {"sign", {s}, [](const TensorList& x, Device) { return ops::sign(x[0]) * x[0] * x[0]; }},
      {"clamp", {s}, [](const TensorList& x, Device) { return ops::clamp(x[0], -0.5f, 0.5f) * x[0]; }},
      {"relu", {s}, [](const TensorList& x, Device) { return ops::relu(x[0]) * x[0]; }},
      {"leaky_relu", {s}, [](const TensorList& x, Device) { return ops::leaky_relu(x[0], 0.2f) * x[0]; }},
      {"tanh", {s}, [](const TensorList& x, Device) { return ops::tanh(x[0]); }},
      {"sigmoid", {s}, [](const TensorList& x, Device) { return ops::sigmoid(x[0]); }},
      {"softplus", {s}, [](const TensorList& x, Device) { return ops::softplus(x[0]); }},
      {"where", {s, s}, [](const TensorList& x, Device) { return ops::where(ops::gt(x[0], x[1]), x[0] * x[1], x[1]); }},
      {"comparisons", {s, s}, [](const TensorList& x, Device) {
         return ops::gt(x[0], x[1]) + ops::lt(x[0], x[1]) * 2.f + ops::ge(x[0], 0.f * x[1]) * 4.f +
                ops::le(x[0], x[1]) * 8.f + ops::eq(x[0], x[0]) * 16.f + ops::gt(x[0], 0.25f) * 32.f;
       }, Order::Forward},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

// core/ops/in_place.h: the same writes on both backends (the lerp kernel is new on each).
TEST_F(OpsParity, InPlaceOps) {
  for (double weight : {0.0, 0.25, 0.5, 0.9, 1.0}) {
    std::vector<Tensor> results;
    for (Device d : {Device::cpu(), Device::cuda(0)}) {
      NanFilledAllocations nan_fill;
      Tensor t = ops::from_vector(values(37, 400), Shape{37}, d);
      const Tensor end = ops::from_vector(values(37, 401), Shape{37}, d);
      ops::lerp_(t, end, weight);
      ops::mul_(t, 3.f);
      ops::add_(t, end);
      results.push_back(t.to(Device::cpu()));
    }
    EXPECT_TRUE(all_close(results[1], results[0], Tolerance{1e-6, 1e-6}, "lerp_, mul_, add_ at weight " +
                                                                             std::to_string(weight)));
  }
  Tensor filled = ops::zeros(Shape{5}, Device::cuda(0));
  ops::fill_(filled, 2.5);
  EXPECT_EQ(filled.to_vector(), std::vector<float>(5, 2.5f));
  Tensor copied = ops::zeros(Shape{3}, Device::cuda(0));
  ops::copy_(copied, ops::from_vector(std::vector<float>{1.f, 2.f, 3.f}, Shape{3}));  // from the host
  EXPECT_EQ(copied.to_vector(), (std::vector<float>{1.f, 2.f, 3.f}));
}

TEST_F(OpsParity, Reductions) {
  const Shape s{2, 3, 4};
  const std::vector<OpCase> cases = {
      {"sum all", {s}, [](const TensorList& x, Device) { return ops::sum(x[0] * x[0]); }},
      {"sum dims keepdim", {s}, [](const TensorList& x, Device) { return ops::sum(x[0] * x[0], {0, 2}, true); }},
      {"mean", {s}, [](const TensorList& x, Device) { return ops::mean(ops::exp(x[0]), {1}); }},
      {"amax", {s}, [](const TensorList& x, Device) { return ops::amax(x[0], {2}); }, Order::Forward},
      {"norm_per_example", {s}, [](const TensorList& x, Device) { return ops::norm_per_example(x[0], 1e-6f); }},
      {"logsumexp", {s}, [](const TensorList& x, Device) { return ops::logsumexp(x[0], 1); }},
      {"sum_to", {s}, [](const TensorList& x, Device) { return ops::sum_to(x[0] * x[0], Shape{3, 1}); }},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

TEST_F(OpsParity, ShapeAndIndexingOps) {
  const Shape s{2, 3, 4};
  const std::vector<OpCase> cases = {
      {"reshape flatten", {s}, [](const TensorList& x, Device) { return ops::flatten(ops::reshape(x[0] * x[0], Shape{6, 4}), 0); }},
      {"permute", {s}, [](const TensorList& x, Device) { return ops::permute(x[0] * x[0], {2, 0, 1}); }},
      {"transpose", {s}, [](const TensorList& x, Device) { return ops::transpose(x[0] * x[0], 0, 2); }},
      {"expand", {Shape{3, 1}}, [](const TensorList& x, Device) { return ops::expand(x[0] * x[0], Shape{2, 3, 4}); }},
      {"concat", {s, Shape{2, 1, 4}}, [](const TensorList& x, Device) { return ops::concat({x[0] * x[0], x[1]}, 1); }},
      {"slice", {s}, [](const TensorList& x, Device) { return ops::slice(x[0] * x[0], 2, 1, 3); }},
      {"split", {s}, [](const TensorList& x, Device) {
         TensorList parts = ops::split(x[0] * x[0], {1, 3}, 2);
         return ops::concat({parts[1], parts[0] * 2.f}, 2);
       }},
      {"pad", {Shape{2, 3, 4, 5}}, [](const TensorList& x, Device) { return ops::pad(x[0] * x[0], {1, 2, 0, 1}, 0.5f); }},
      {"index_select", {s}, [](const TensorList& x, Device d) { return ops::index_select(x[0] * x[0], 1, index_on(d, {2, 0, 2})); }},
      {"index_add", {Shape{4, 3}, Shape{5, 3}}, [](const TensorList& x, Device d) {
         return ops::index_add(x[0] * x[0], 0, index_on(d, {1, 3, 1, 0, 1}), x[1] * x[1]);
       }},
      {"embedding", {Shape{5, 3}}, [](const TensorList& x, Device d) {
         return ops::embedding(x[0] * x[0], ops::from_vector(std::vector<int64_t>{4, 0, 4, 2}, Shape{2, 2}, d));
       }},
      {"one_hot", {}, [](const TensorList&, Device d) { return ops::one_hot(index_on(d, {2, 0, 3}), 4); }, Order::Forward},
      {"upsample_nearest2d", {Shape{1, 2, 3, 3}}, [](const TensorList& x, Device) { return ops::upsample_nearest2d(x[0] * x[0], 2); }},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

TEST_F(OpsParity, DenseOps) {
  const std::vector<OpCase> cases = {
      {"conv2d", {Shape{2, 3, 6, 6}, Shape{4, 3, 3, 3}, Shape{4}}, [](const TensorList& x, Device) {
         return ops::conv2d(x[0], x[1], x[2], ops::Conv2dOptions::make(2, 1));
       }},
      {"conv2d dilated", {Shape{1, 2, 7, 7}, Shape{3, 2, 3, 3}}, [](const TensorList& x, Device) {
         return ops::conv2d(x[0], x[1], {}, ops::Conv2dOptions::make(1, 2, 2));
       }},
      {"conv_transpose2d", {Shape{2, 4, 3, 3}, Shape{4, 3, 4, 4}, Shape{3}}, [](const TensorList& x, Device) {
         return ops::conv_transpose2d(x[0], x[1], x[2], ops::Conv2dOptions::make(2, 1));
       }},
      {"conv_transpose2d output_padding", {Shape{1, 2, 3, 3}, Shape{2, 2, 3, 3}}, [](const TensorList& x, Device) {
         return ops::conv_transpose2d(x[0], x[1], {}, ops::Conv2dOptions::make(2, 1, 1, 1));
       }},
      {"matmul", {Shape{4, 5}, Shape{6, 5}}, [](const TensorList& x, Device) { return ops::matmul(x[0], x[1], false, true); }},
      {"matmul transposed a", {Shape{5, 4}, Shape{5, 3}}, [](const TensorList& x, Device) { return ops::matmul(x[0], x[1], true, false); }},
      {"linear", {Shape{3, 5}, Shape{2, 5}, Shape{2}}, [](const TensorList& x, Device) { return ops::linear(x[0], x[1], x[2]); }},
      {"layer_norm", {Shape{3, 2, 4}, Shape{2, 4}, Shape{2, 4}}, [](const TensorList& x, Device) {
         return ops::layer_norm(x[0], x[1], x[2], 2);
       }},
      {"batch_norm eval", {Shape{4, 3, 2, 2}, Shape{3}, Shape{3}}, [](const TensorList& x, Device d) {
         Tensor rm = ops::from_vector(std::vector<float>{0.1f, -0.2f, 0.3f}, Shape{3}, d);
         Tensor rv = ops::from_vector(std::vector<float>{1.5f, 0.5f, 2.f}, Shape{3}, d);
         return ops::batch_norm(x[0], x[1], x[2], rm, rv, /*training=*/false);
       }},
      // training-mode batch norm and max pooling say they have no double backward (engine.md)
      {"batch_norm training", {Shape{4, 3, 2, 2}, Shape{3}, Shape{3}}, [](const TensorList& x, Device d) {
         Tensor rm = ops::zeros(Shape{3}, d), rv = ops::ones(Shape{3}, d);
         Tensor y = ops::batch_norm(x[0], x[1], x[2], rm, rv, /*training=*/true);
         return ops::concat({ops::flatten(y, 0), rm, rv}, 0);  // running stats updated in place
       }, Order::First},
      {"avg_pool2d", {Shape{2, 2, 5, 5}}, [](const TensorList& x, Device) { return ops::avg_pool2d(x[0] * x[0], 3, 2, 1); }},
      {"max_pool2d", {Shape{2, 2, 5, 5}}, [](const TensorList& x, Device) { return ops::max_pool2d(x[0], 3, 2, 1); }, Order::First},
      // the FID Inception's pools and its resize to 299 (up, down and mixed sizes)
      {"avg_pool2d exclude pad", {Shape{2, 2, 5, 6}}, [](const TensorList& x, Device) {
         return ops::avg_pool2d(x[0] * x[0], 3, 1, 1, /*count_include_pad=*/false);
       }},
      {"max_pool2d k3 s1 p1", {Shape{2, 2, 5, 6}}, [](const TensorList& x, Device) { return ops::max_pool2d(x[0], 3, 1, 1); }, Order::First},
      {"resize_bilinear up", {Shape{2, 2, 4, 5}}, [](const TensorList& x, Device) { return ops::resize_bilinear(x[0] * x[0], 9, 13); }},
      {"resize_bilinear down", {Shape{1, 3, 11, 8}}, [](const TensorList& x, Device) { return ops::resize_bilinear(x[0] * x[0], 4, 5); }},
      {"resize_bilinear mixed", {Shape{1, 1, 3, 17}}, [](const TensorList& x, Device) { return ops::resize_bilinear(x[0] * x[0], 7, 6); }},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

TEST_F(OpsParity, LossesAndDropout) {
  const std::vector<OpCase> cases = {
      {"bce_with_logits", {Shape{6}, Shape{6}}, [](const TensorList& x, Device) {
         return ops::bce_with_logits(x[0] * 3.f, ops::sigmoid(x[1]));
       }},
      {"bce_with_logits none", {Shape{2, 3}, Shape{2, 3}}, [](const TensorList& x, Device) {
         return ops::bce_with_logits(x[0], ops::sigmoid(x[1]), ops::Reduction::None);
       }},
      {"cross_entropy", {Shape{4, 5}}, [](const TensorList& x, Device d) {
         return ops::cross_entropy(x[0] * 2.f, index_on(d, {1, 4, 0, 1}), ops::Reduction::Sum);
       }},
      {"log_softmax", {Shape{3, 5}}, [](const TensorList& x, Device) { return ops::log_softmax(x[0], 1); }},
      {"mse_loss", {Shape{3, 4}, Shape{3, 4}}, [](const TensorList& x, Device) { return ops::mse_loss(x[0], x[1]); }},
      {"dropout", {Shape{4, 8}}, [](const TensorList& x, Device) {
         return ops::dropout(x[0] * x[0], 0.3f, RngKey{5, stream_id(1)}, 11);
       }},
      {"randn rand", {Shape{3, 4}}, [](const TensorList& x, Device d) {
         return x[0] * ops::randn(Shape{3, 4}, RngKey{6, 7}, 3, d) + ops::rand(Shape{4}, RngKey{6, 8}, 0, d);
       }, Order::First},
      {"factories", {}, [](const TensorList&, Device d) {
         return ops::concat({ops::arange(0, 5, 1, d), ops::full(Shape{2}, 2.5, d), ops::ones(Shape{1}, d),
                             ops::zeros(Shape{1}, d)}, 0);
       }, Order::Forward},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

// upfirdn2d (Note [upfirdn2d]): the CUDA kernel gathers taps directly, the CPU scatters into a
// padded buffer; up, down, crops, a non-square filter and flip_filter, to second order.
TEST_F(OpsParity, UpFirDn2d) {
  auto filter = [](Device d) { return ops::from_vector(std::vector<float>{0.1f, 0.4f, -0.3f, 0.8f, 0.5f, 0.2f}, Shape{3, 2}, d); };
  auto opts = [](int up, int down, int px0, int px1, int py0, int py1, bool flip) {
    ops::UpFirDn2dOptions o;
    o.up = up;
    o.down = down;
    o.pad_x0 = px0;
    o.pad_x1 = px1;
    o.pad_y0 = py0;
    o.pad_y1 = py1;
    o.flip_filter = flip;
    o.gain = 1.5f;
    return o;
  };
  const std::vector<OpCase> cases = {
      {"upsample2d [1,3,3,1]", {Shape{2, 3, 5, 4}}, [](const TensorList& x, Device d) {
         return ops::upsample2d(x[0] * x[0], ops::fir_filter({1, 3, 3, 1}, d), 2);
       }},
      {"downsample2d [1,3,3,1]", {Shape{2, 2, 8, 6}}, [](const TensorList& x, Device d) {
         return ops::downsample2d(x[0] * x[0], ops::fir_filter({1, 3, 3, 1}, d), 2);
       }},
      {"upfirdn2d up 2 down 3 crop", {Shape{1, 2, 6, 7}}, [&](const TensorList& x, Device d) {
         return ops::upfirdn2d(x[0] * x[0], filter(d), opts(2, 3, 1, -1, 2, 0, false));
       }},
      {"upfirdn2d flip negative pads", {Shape{2, 1, 5, 5}}, [&](const TensorList& x, Device d) {
         return ops::upfirdn2d(x[0] * x[0], filter(d), opts(1, 1, -1, 2, 1, -1, true));
       }},
  };
  for (const OpCase& c : cases) expect_parity(c);
}

}  // namespace
}  // namespace gantry::gputest
