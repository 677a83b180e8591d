// The convolution roofline (Note [conv roofline]): the recorder stands in front of the CPU
// backend only while it is alive, notes every direction of every convolution with its count,
// and the recorded calls time as bare primitives.
#include <gtest/gtest.h>

#include "backend/conv_roofline.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

TEST(ConvRoofline, RecordsConvolutionsOnlyWhileTheRecorderIsInstalled) {
  Tensor x = ops::rand(Shape{2, 3, 8, 8}, RngKey{4, 5});
  Tensor w = ops::rand(Shape{4, 3, 3, 3}, RngKey{4, 6});
  Backend& cpu = backend_for(Device::cpu());
  std::vector<RecordedConv> calls;
  {
    ConvRecorder recorder(DeviceKind::CPU);
    EXPECT_EQ(&backend_for(Device::cpu()), &recorder);
    EXPECT_EQ(recorder.name(), "cpu");
    ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1));
    ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1));
    calls = recorder.recorded();
  }
  EXPECT_EQ(&backend_for(Device::cpu()), &cpu);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].count, 2);
  EXPECT_EQ(calls[0].call.direction, ConvDirection::Forward);
  EXPECT_EQ(calls[0].call.src, (Shape{2, 3, 8, 8}));
  EXPECT_EQ(calls[0].call.dst, (Shape{2, 4, 8, 8}));
  EXPECT_DOUBLE_EQ(calls[0].call.flops(), 2.0 * 2 * 4 * 3 * 3 * 3 * 8 * 8);
  EXPECT_GT(raw_conv_seconds(DeviceKind::CPU, calls[0].call, 0.001), 0.0);
}

TEST(ConvRoofline, RecordsBothBackwardDirectionsAsTheConvsTheyRun) {
  Tensor x = ops::rand(Shape{2, 3, 8, 8}, RngKey{4, 7});
  Tensor w = ops::rand(Shape{4, 3, 4, 4}, RngKey{4, 8});
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  ConvRecorder recorder(DeviceKind::CPU);
  Tensor y = ops::conv2d(x, w, {}, ops::Conv2dOptions::make(2, 1));  // (2, 4, 4, 4)
  autograd::grad({ops::sum(y)}, {x, w});
  const std::vector<RecordedConv> calls = recorder.recorded();
  ASSERT_EQ(calls.size(), 3u);
  for (const RecordedConv& c : calls) {
    EXPECT_EQ(c.count, 1);
    EXPECT_EQ(c.call.src, (Shape{2, 3, 8, 8}));
    EXPECT_EQ(c.call.weights, (Shape{4, 3, 4, 4}));
    EXPECT_EQ(c.call.dst, (Shape{2, 4, 4, 4}));
    EXPECT_EQ(c.call.params.stride[0], 2);
  }
  EXPECT_EQ(calls[0].call.direction, ConvDirection::Forward);
  EXPECT_NE(calls[1].call.direction, calls[2].call.direction);
  EXPECT_NE(calls[1].call.direction, ConvDirection::Forward);
  EXPECT_NE(calls[2].call.direction, ConvDirection::Forward);
}

TEST(ConvRoofline, CudaHasNoRooflineAndSaysSo) {
  EXPECT_FALSE(has_conv_roofline(DeviceKind::CUDA));
  ConvCall call{ConvDirection::Forward, Shape{1, 1, 4, 4}, Shape{1, 1, 3, 3}, Shape{1, 1, 2, 2}, {}, 1};
  try {
    raw_conv_seconds(DeviceKind::CUDA, call);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no convolution roofline for CUDA"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry
