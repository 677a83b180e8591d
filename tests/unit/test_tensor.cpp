// Tensor handles, factories, devices, dtypes, Philox streams and the thread budget.
#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>
#include <thread>

#include "base/threads.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

TEST(Tensor, CopyIsAHandleCloneCopiesData) {
  Tensor a = ops::zeros({2, 3});
  Tensor b = a;
  Tensor c = a.clone();
  a.data<float>()[0] = 5.f;
  EXPECT_EQ(b.data<float>()[0], 5.f);
  EXPECT_EQ(c.data<float>()[0], 0.f);
  EXPECT_TRUE(a.same(b));
  EXPECT_FALSE(a.same(c));
}

TEST(Tensor, FactoriesFillValues) {
  EXPECT_EQ(ops::ones({2, 2}).to_vector(), std::vector<float>(4, 1.f));
  EXPECT_EQ(ops::full({3}, 2.5).to_vector(), std::vector<float>(3, 2.5f));
  EXPECT_EQ(ops::arange(0, 5).to_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ops::arange(1, 0, -0.25).to_vector(), (std::vector<float>{1, 0.75f, 0.5f, 0.25f}));
  Tensor idx = ops::arange(0, 3, 1, Device::cpu(), DType::I64);
  EXPECT_EQ(idx.dtype(), DType::I64);
  EXPECT_EQ(idx.data<int64_t>()[2], 2);
  EXPECT_THROW(ops::from_vector(std::vector<float>{1, 2, 3}, Shape{2, 2}), Error);
}

TEST(Tensor, ShapesUpToFiveDimensions) {
  Tensor t = ops::zeros({1, 2, 3, 4, 5});
  EXPECT_EQ(t.dim(), 5);
  EXPECT_EQ(t.numel(), 120);
  EXPECT_EQ(t.shape().str(), "(1, 2, 3, 4, 5)");
  EXPECT_EQ(t.size(-1), 5);
  EXPECT_THROW(t.size(5), Error);
  EXPECT_THROW(Shape({1, 2, 3, 4, 5, 6, 7}), Error);
}

TEST(Tensor, DtypeConversions) {
  Tensor f = ops::from_vector(std::vector<float>{-1.5f, 0.f, 2.25f, 300.f}, Shape{4});
  EXPECT_EQ(f.to(DType::BF16).to(DType::F32).to_vector(), f.to_vector());  // exact in bf16
  EXPECT_EQ(f.to(DType::F16).to(DType::F32).to_vector(), f.to_vector());
  Tensor u8 = f.to(DType::U8);
  EXPECT_EQ(u8.data<uint8_t>()[0], 0);    // clamped
  EXPECT_EQ(u8.data<uint8_t>()[3], 255);  // clamped
  EXPECT_EQ(u8.data<uint8_t>()[2], 2);
  EXPECT_EQ(ops::from_vector(std::vector<int64_t>{3, 7}, Shape{2}).to_vector(), (std::vector<float>{3, 7}));
  EXPECT_THROW(f.data<int64_t>(), Error);
}

TEST(Tensor, FloatToIntegerConversionsSaturateAndMapNanToZero) {
  // As the CUDA backend converts (backend/functors.h); a bare cast would be undefined here.
  const float nan = std::nanf(""), big = 1e30f;
  Tensor f = ops::from_vector(std::vector<float>{nan, big, -big, -2.75f, 2.75f, 254.6f}, Shape{6});
  const int64_t* i = f.to(DType::I64).data<int64_t>();
  EXPECT_EQ(i[0], 0);
  EXPECT_EQ(i[1], INT64_MAX);
  EXPECT_EQ(i[2], INT64_MIN);
  EXPECT_EQ(i[3], -2);  // toward zero
  EXPECT_EQ(i[4], 2);
  const uint8_t* u = f.to(DType::U8).data<uint8_t>();
  EXPECT_EQ(u[0], 0);
  EXPECT_EQ(u[1], 255);
  EXPECT_EQ(u[2], 0);
  EXPECT_EQ(u[4], 3);  // half up
  EXPECT_EQ(u[5], 255);
  // fill converts as cast does: rounded and saturated, not wrapped
  EXPECT_EQ(ops::full({2}, 3.7, Device::cpu(), DType::U8).data<uint8_t>()[1], 4);
  EXPECT_EQ(ops::full({2}, -1.0, Device::cpu(), DType::U8).data<uint8_t>()[0], 0);
  EXPECT_EQ(ops::full({2}, 300.0, Device::cpu(), DType::U8).data<uint8_t>()[0], 255);
}

TEST(Tensor, DevicesParseAndFailClearly) {
  EXPECT_EQ(Device::parse("cpu:1"), Device::cpu(1));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("cpu"), Device::cpu(0));
  EXPECT_THROW(Device::parse("tpu:0"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  // Logical CPU devices share host memory and copy between each other.
  Tensor a = ops::arange(0, 4, 1, Device::cpu(0));
  Tensor b = a.to(Device::cpu(1));
  EXPECT_EQ(b.device(), Device::cpu(1));
  EXPECT_EQ(b.to_vector(), a.to_vector());
  EXPECT_THROW(ops::add(a, b), Error);  // different devices
}

TEST(Tensor, RequiresGradOnlyOnF32Leaves) {
  Tensor x = ops::ones({2});
  x.set_requires_grad(true);
  Tensor y = ops::mul(x, 2.f);
  EXPECT_THROW(y.set_requires_grad(false), Error);
  Tensor i = ops::arange(0, 2, 1, Device::cpu(), DType::I64);
  EXPECT_THROW(i.set_requires_grad(true), Error);
}

TEST(Philox, SameKeySameNumbersAnyOffsetSplit) {
  RngKey key{42, stream_id(1, 2)};
  Tensor whole = ops::randn({1000}, key);
  Tensor tail = ops::randn({400}, key, 600);
  std::vector<float> w = whole.to_vector(), t = tail.to_vector();
  for (int i = 0; i < 400; ++i) ASSERT_EQ(w[600 + i], t[i]) << i;
  // odd offsets too (normals come in pairs, uniforms in fours)
  Tensor u = ops::rand({1000}, key), u3 = ops::rand({10}, key, 3);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(u.to_vector()[3 + i], u3.to_vector()[i]);
  EXPECT_NE(ops::randn({4}, RngKey{43, key.stream}).to_vector(), ops::randn({4}, key).to_vector());
}

TEST(Philox, IndependentOfThreadCount) {
  RngKey key{7, 9};
  std::vector<float> one, two;
  {
    ThreadBudgetScope s(1);
    one = ops::randn({1 << 17}, key).to_vector();
  }
  {
    ThreadBudgetScope s(2);
    two = ops::randn({1 << 17}, key).to_vector();
  }
  EXPECT_EQ(one, two);
}

TEST(Philox, MomentsAreRight) {
  std::vector<float> n = ops::randn({200000}, RngKey{1, 1}).to_vector();
  double mean = 0, sq = 0;
  for (float v : n) {
    mean += v;
    sq += double(v) * v;
  }
  mean /= n.size();
  double var = sq / n.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);   // 4.5 standard errors
  EXPECT_NEAR(var, 1.0, 0.015);
  std::vector<float> u = ops::rand({200000}, RngKey{1, 2}).to_vector();
  double um = 0;
  for (float v : u) {
    ASSERT_GT(v, 0.f);
    ASSERT_LE(v, 1.f);
    um += v;
  }
  EXPECT_NEAR(um / u.size(), 0.5, 0.003);
}

TEST(Threads, BudgetIsPerThreadOverridable) {
  int global = num_threads();
  EXPECT_GE(global, 1);
  {
    ThreadBudgetScope s(1);
    EXPECT_EQ(num_threads(), 1);
  }
  EXPECT_EQ(num_threads(), global);
  EXPECT_THROW(set_num_threads(0), Error);
}

// A default chosen by a caller (co-located workers' share) never overrides a chosen budget.
TEST(Threads, DefaultYieldsToAChosenBudget) {
  const int before = num_threads();
  set_num_threads(before);  // chosen from here on in this process
  set_default_num_threads(before + 1);
  EXPECT_EQ(num_threads(), before);
  EXPECT_THROW(set_default_num_threads(0), Error);
}

// The default budget counts the CPUs a thread may run on (taskset, a launcher's binding), not
// the machine's.
TEST(Threads, AvailableCpusFollowTheAffinityMask) {
  EXPECT_GE(available_cpus(), 1);
  EXPECT_LE(available_cpus(), hardware_threads());
  int pinned = 0;
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    pinned = available_cpus();
  }).join();
  EXPECT_EQ(pinned, 1);
}

TEST(Threads, ReductionsDoNotDependOnThreadCount) {
  Tensor x = ops::randn({3, 70000}, RngKey{3, 3});
  std::vector<float> a, b, c, d;
  {
    ThreadBudgetScope s(1);
    a = ops::sum(x).to_vector();
    c = ops::sum(x, {1}).to_vector();
  }
  {
    ThreadBudgetScope s(2);
    b = ops::sum(x).to_vector();
    d = ops::sum(x, {1}).to_vector();
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(c, d);
}

}  // namespace
}  // namespace gantry
