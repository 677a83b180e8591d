// The CUDA backend on a real device: parity of its kernels with the shared functors computed on
// the host. Skipped (with the reason) where no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "base/philox.h"
#include "gpu_test_support.h"

namespace gantry::cuda {
namespace {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GANTRY_REQUIRE_CUDA_DEVICES(1);
  }

  Backend& backend() { return cuda_backend(); }

  // A device buffer holding `data`, freed at the end of the test.
  View upload(const std::vector<float>& data, Shape shape) {
    View v{backend().allocate(data.size() * sizeof(float), Device::cuda(0)), shape, DType::F32,
           Device::cuda(0)};
    buffers_.push_back(v);
    backend().copy_from_host(data.data(), v);
    return v;
  }
  View empty(Shape shape) {
    View v{backend().allocate(static_cast<size_t>(shape.numel()) * sizeof(float),
                              Device::cuda(0)),
           shape, DType::F32, Device::cuda(0)};
    buffers_.push_back(v);
    return v;
  }
  std::vector<float> download(const View& v) {
    std::vector<float> out(static_cast<size_t>(v.numel()));
    backend().copy_to_host(v, out.data());
    return out;
  }
  void TearDown() override {
    for (View& v : buffers_)
      backend().deallocate(v.data, static_cast<size_t>(v.numel()) * sizeof(float), v.device);
  }

 private:
  std::vector<View> buffers_;
};

// Same float, or both NaN, or within a few ulps (CUDA's expf/logf/tanhf differ from glibc's by
// up to 2 ulp).
void expect_ulps(float got, float want, int ulps, const char* what, float x) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << "(" << x << ")";
    return;
  }
  if (got == want) return;
  float tol = ulps * std::fabs(std::nextafter(want, INFINITY) - want);
  EXPECT_NEAR(got, want, std::max(tol, 1e-38f)) << what << "(" << x << ")";
}

TEST_F(CudaDeviceTest, ReportsTheDevice) {
  EXPECT_GT(backend().device_count(), 0);
  EXPECT_EQ(backend().kind(), DeviceKind::CUDA);
  EXPECT_THROW(backend().allocate(16, Device::cuda(backend().device_count())), Error);
}

TEST_F(CudaDeviceTest, UnaryOpsMatchTheHostFunctor) {
  std::vector<float> xs;
  for (int i = -400; i <= 400; ++i) xs.push_back(static_cast<float>(i) * 0.25f);
  xs.insert(xs.end(), {-1000.f, 1000.f, 1e-30f, -1e-30f, -0.f});
  View x = upload(xs, Shape{static_cast<int64_t>(xs.size())});
  View y = empty(x.shape);
  const UnaryOp ops[] = {UnaryOp::Neg,        UnaryOp::Exp,       UnaryOp::Log,
                         UnaryOp::Abs,        UnaryOp::Sign,      UnaryOp::Sqrt,
                         UnaryOp::Rsqrt,      UnaryOp::Square,    UnaryOp::Reciprocal,
                         UnaryOp::Relu,       UnaryOp::LeakyRelu, UnaryOp::Tanh,
                         UnaryOp::Sigmoid,    UnaryOp::Softplus,  UnaryOp::Pow,
                         UnaryOp::AddScalar,  UnaryOp::MulScalar, UnaryOp::Affine,
                         UnaryOp::Clamp,      UnaryOp::InRange,   UnaryOp::GtScalar,
                         UnaryOp::LeakyReluSlope};
  for (UnaryOp op : ops) {
    UnaryFn fn{op, op == UnaryOp::Pow ? 2.f : 0.2f, 1.5f};
    backend().unary(fn, x, y);
    std::vector<float> got = download(y);
    for (size_t i = 0; i < xs.size(); ++i)
      expect_ulps(got[i], fn(xs[i]), 4, "unary op", xs[i]);
  }
}

TEST_F(CudaDeviceTest, BinaryOpsBroadcastLikeTheHost) {
  // a (3, 1, 5) op b (4, 1) -> y (3, 4, 5)
  std::vector<float> av(15), bv(4);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) * 0.5f - 3.f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) - 1.5f;
  View a = upload(av, Shape{3, 1, 5}), b = upload(bv, Shape{4, 1});
  View y = empty(Shape{3, 4, 5});
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                      BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Gt, BinaryOp::Eq}) {
    BinaryFn fn{op};
    backend().binary(fn, a, b, y);
    std::vector<float> got = download(y);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 5; ++k)
          EXPECT_EQ(got[(i * 4 + j) * 5 + k], fn(av[i * 5 + k], bv[j]))
              << "op " << static_cast<int>(op) << " at " << i << "," << j << "," << k;
  }
}

TEST_F(CudaDeviceTest, RandomEqualsTheHostGenerator) {
  RngKey key{2024, stream_id(3, 4)};
  const uint64_t offset = 4 * 1000 + 3;  // not block-aligned on purpose
  View y = empty(Shape{1001});
  backend().random(y, Distribution::Uniform, key, offset, -2.f, 3.f);
  std::vector<float> got = download(y);
  for (size_t i = 0; i < got.size(); ++i) {
    float u = philox_uniform(key, offset + i);
    ASSERT_EQ(got[i], -2.f + 5.f * u) << i;  // bitwise: integer math and non-fused rounding
  }
  backend().random(y, Distribution::Normal, key, offset, 1.f, 0.5f);
  got = download(y);
  for (size_t i = 0; i < got.size(); ++i) {
    // z agrees to a few ulps (CUDA's logf/sinf/cosf vs glibc's), and 1 + 0.5 z cancels near
    // z = -2: bound the difference by ulps of z plus the result's own rounding.
    const float z = philox_normal(key, offset + i), want = 1.f + 0.5f * z;
    const float ulp_z = std::nextafter(std::fabs(z), INFINITY) - std::fabs(z);
    const float ulp_want = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
    EXPECT_NEAR(got[i], want, 8 * 0.5f * ulp_z + 2 * ulp_want) << "normal " << i;
  }
}

TEST_F(CudaDeviceTest, ReduceSumsInDouble) {
  // x (4, 3000, 2): sum over axis 1 and max over axes 0 and 2
  std::vector<float> xs(4 * 3000 * 2);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<float>(i)) * 100.f;
  View x = upload(xs, Shape{4, 3000, 2});
  View s = empty(Shape{4, 1, 2});
  backend().reduce(ReduceFn{ReduceOp::Sum}, x, 0b010, s);
  std::vector<float> got = download(s);
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 2; ++k) {
      double want = 0;
      for (int j = 0; j < 3000; ++j) want += xs[(i * 3000 + j) * 2 + k];
      EXPECT_NEAR(got[i * 2 + k], want, 1e-5 * (1 + std::fabs(want)));
    }
  View m = empty(Shape{1, 3000, 1});
  backend().reduce(ReduceFn{ReduceOp::Max}, x, 0b101, m);
  got = download(m);
  for (int j = 0; j < 3000; ++j) {
    float want = -INFINITY;
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 2; ++k) want = std::max(want, xs[(i * 3000 + j) * 2 + k]);
    EXPECT_EQ(got[j], want) << j;
  }
}

TEST_F(CudaDeviceTest, MatmulMatchesAHostLoop) {
  // y (3, 2) = a^T (3, 4) b (4, 2) + bias (2)
  std::vector<float> av(12), bv(8), biasv = {0.5f, -1.f};
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) - 5.f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) * 0.25f;
  View a = upload(av, Shape{4, 3}), b = upload(bv, Shape{4, 2}), bias = upload(biasv, Shape{2});
  View y = empty(Shape{3, 2});
  backend().matmul(a, b, /*trans_a=*/true, /*trans_b=*/false, &bias, y);
  std::vector<float> got = download(y);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      float want = biasv[j];
      for (int k = 0; k < 4; ++k) want += av[k * 3 + i] * bv[k * 2 + j];
      EXPECT_NEAR(got[i * 2 + j], want, 1e-5f) << i << "," << j;
    }
}

TEST_F(CudaDeviceTest, AllocatorCachesFreedMemory) {
  AllocatorStats before = memory_stats(0);
  void* p = backend().allocate(3 << 20, Device::cuda(0));
  backend().deallocate(p, 3 << 20, Device::cuda(0));
  void* q = backend().allocate(3 << 20, Device::cuda(0));
  EXPECT_EQ(q, p);
  AllocatorStats after = memory_stats(0);
  EXPECT_GE(after.cache_hits, before.cache_hits + 1);
  backend().deallocate(q, 3 << 20, Device::cuda(0));
  synchronize(0);
  empty_cache(0);
}

}  // namespace
}  // namespace gantry::cuda
