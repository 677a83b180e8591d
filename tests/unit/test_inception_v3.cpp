// The FID Inception-v3's weights file and input handling (metrics/inception_v3.h); its values
// against PyTorch are in tests/golden/test_golden_inception.cpp.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "metrics/inception_v3.h"
#include "metrics/sequential_feature_network.h"
#include "nn/safetensors.h"
#include "support/temp_dir.h"

namespace gantry {
namespace {

std::string error_of(nlohmann::json spec) {
  try {
    (void)metrics::make_feature_network(spec, "hooks.metrics[0].network");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InceptionV3, ExpectsTorchvisionNamesAndShapes) {
  const auto tensors = metrics::inception_v3_expected_tensors();
  ASSERT_EQ(tensors.size(), 94u * 5u + 2u);  // 94 BasicConv2d (conv + 4 batch norm tensors), fc
  EXPECT_EQ(tensors.front().first, "Conv2d_1a_3x3.conv.weight");
  EXPECT_EQ(tensors.front().second, (Shape{32, 3, 3, 3}));
  int64_t parameters = 0;
  for (const auto& [name, shape] : tensors) {
    if (name.find("running_") == std::string::npos) parameters += shape.numel();
    if (name == "Mixed_6b.branch7x7_2.conv.weight") {
      EXPECT_EQ(shape, (Shape{128, 128, 1, 7}));
    }
    if (name == "Mixed_7c.branch_pool.conv.weight") {
      EXPECT_EQ(shape, (Shape{192, 2048, 1, 1}));
    }
  }
  EXPECT_EQ(tensors.back().first, "fc.bias");
  // torchvision's inception_v3 has 27,161,264 parameters; without its aux head (3,326,696) and
  // with 1008 instead of 1000 logits (+8 x 2049):
  EXPECT_EQ(parameters, 27161264 - 3326696 + 8 * 2049);
}

TEST(InceptionV3, MissingWeightsFileNamesItAndTheExpectedTensors) {
  const std::string err = error_of({{"type", "inception_v3"}, {"weights", "/nonexistent/pt_inception.safetensors"}});
  EXPECT_NE(err.find("hooks.metrics[0].network.weights"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/pt_inception.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("convert_inception_weights.py"), std::string::npos) << err;
  EXPECT_NE(err.find("Mixed_7c.branch_pool.conv.weight"), std::string::npos) << err;
}

TEST(InceptionV3, MismatchingWeightsFileListsEveryProblem) {
  testing::TempDir dir;
  const std::string file = dir.file("wrong.safetensors");
  nn::write_safetensors(file, {{"fc.weight", ops::zeros(Shape{1000, 2048})},   // torchvision's 1000 classes
                               {"fc.bias", ops::zeros(Shape{1008})},
                               {"AuxLogits.fc.weight", ops::zeros(Shape{2, 2})}});
  const std::string err = error_of({{"type", "inception_v3"}, {"weights", file}});
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("missing Conv2d_1a_3x3.conv.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("fc.weight: expected shape"), std::string::npos) << err;
  EXPECT_NE(err.find("unexpected AuxLogits.fc.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("expected tensors:"), std::string::npos) << err;
  EXPECT_EQ(err.find("missing fc.bias"), std::string::npos) << err;
}

TEST(InceptionV3, DescriptionIsStrict) {
  EXPECT_NE(error_of({{"type", "inception_v3"}}).find("weights"), std::string::npos);
  const std::string err = error_of({{"type", "inception_v3"}, {"weights", "w.safetensors"}, {"resize", "area"}});
  EXPECT_NE(err.find("resize"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key"), std::string::npos) << err;
}

// Grayscale is repeated to 3 channels and any other size is resized to 299x299 bilinearly
// (align_corners=False); the resize mode is part of the identity every result records.
TEST(InceptionV3, PreparesImagesAsPytorchFid) {
  nn::NamedTensors zeros;
  for (const auto& [name, shape] : metrics::inception_v3_expected_tensors()) zeros.emplace_back(name, ops::zeros(shape));
  metrics::InceptionV3 net(zeros, "zeros", "zeros");
  EXPECT_NE(net.identity().find("align_corners=False"), std::string::npos) << net.identity();
  NoGradGuard no_grad;
  const Tensor gray = ops::tanh(ops::randn(Shape{2, 1, 28, 28}, RngKey{3, 1}));
  const Tensor prepared = net.prepare(gray);
  ASSERT_EQ(prepared.shape(), (Shape{2, 3, 299, 299}));
  const Tensor resized = ops::resize_bilinear(gray, 299, 299);
  for (int64_t c = 0; c < 3; ++c)
    EXPECT_EQ(ops::amax(ops::abs(ops::slice(prepared, 1, c, c + 1) - resized)).item(), 0.f);
  const Tensor full = ops::tanh(ops::randn(Shape{1, 3, 299, 299}, RngKey{3, 2}));
  EXPECT_EQ(ops::amax(ops::abs(net.prepare(full) - full)).item(), 0.f);
  EXPECT_THROW(net.prepare(ops::zeros(Shape{1, 2, 8, 8})), Error);
  // Zero weights: every feature is relu(0) = 0 and the logits are fc.bias = 0.
  const metrics::FeatureBatch out = net.extract(gray, true);
  EXPECT_EQ(out.features.shape(), (Shape{2, 2048}));
  EXPECT_EQ(out.logits.shape(), (Shape{2, 1008}));
  EXPECT_EQ(ops::amax(ops::abs(out.features)).item(), 0.f);
  EXPECT_EQ(ops::amax(ops::abs(out.logits)).item(), 0.f);
}

}  // namespace
}  // namespace gantry
