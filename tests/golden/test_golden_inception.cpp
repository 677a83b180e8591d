// The FID Inception-v3 (metrics/inception_v3.h) against pytorch-fid's network in PyTorch
// (tests/golden/make_inception_golden.py wrote data/inception_v3.json): features and logits of
// colour and grayscale images resized to 299x299, and each changed block (FIDInceptionA, C, E_1,
// E_2) on its own, all on synthetic weights generated from a seed on both sides.
//
// Tolerance. The reference runs in float64; Gantry in float32 with the batch norm folded into
// the convolutions, through ~100 layers with sums of up to 3456 products each. Measured worst
// |diff| relative to the largest magnitude of a compared set: 3e-6 (logit sums), below 1e-6
// elsewhere (avx512, 2 threads). We allow 2e-5 of that scale, while a wrong pool, padding or
// branch order moves outputs by O(10%) of it.
#include <cstdio>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "golden/inception_synthetic.h"
#include "metrics/inception_v3.h"
#include "support/test_paths.h"

namespace gantry {
namespace {

constexpr double kRelativeToScale = 2e-5;

nlohmann::json golden() {
  std::ifstream f(testing::golden_dir() + "/inception_v3.json");
  EXPECT_TRUE(f.good());
  return nlohmann::json::parse(f);
}

// Every value within kRelativeToScale x max|expected| of the reference; reports the worst.
void expect_close(const std::vector<float>& actual, const nlohmann::json& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0, worst = 0;
  size_t worst_at = 0;
  for (const auto& e : expected) scale = std::max(scale, std::abs(e.get<double>()));
  ASSERT_GT(scale, 0) << what << ": an all-zero reference checks nothing";
  for (size_t i = 0; i < actual.size(); ++i) {
    const double d = std::abs(actual[i] - expected[i].get<double>());
    if (d > worst) worst = d, worst_at = i;
  }
  EXPECT_LE(worst, kRelativeToScale * scale)
      << what << ": worst |diff| " << worst << " at " << worst_at << " (Gantry " << actual[worst_at]
      << ", PyTorch " << expected[worst_at].get<double>() << "), scale " << scale;
  std::printf("%s: worst |diff| / scale = %.3g\n", what.c_str(), worst / scale);
}

// Every `step`-th index along dim 1 of x (N, C, ...), in row-major order (the script's x[:, ::step]).
std::vector<float> every(const Tensor& x, int64_t step) {
  const Tensor host = x.to(Device::cpu());
  const float* p = host.data<float>();
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; j += step)
      for (int64_t k = 0; k < inner; ++k) out.push_back(p[(i * c + j) * inner + k]);
  return out;
}

// Per-row sums of x (N, D), and of its squares.
std::vector<float> row_sums(const Tensor& x, bool squares) {
  return ops::sum(squares ? ops::square(x) : x, {1}).to(Device::cpu()).to_vector();
}

std::map<std::string, Tensor> by_name(const nn::NamedTensors& tensors) {
  std::map<std::string, Tensor> m;
  for (const auto& [name, t] : tensors) m.emplace(name, t);
  return m;
}

class GoldenInception : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new nlohmann::json(golden());
    weights_ = new nn::NamedTensors(test::synthetic_inception_weights((*golden_)["weight_seed"].get<uint32_t>()));
  }
  static void TearDownTestSuite() {
    delete golden_;
    delete weights_;
  }
  static nlohmann::json* golden_;
  static nn::NamedTensors* weights_;
};
nlohmann::json* GoldenInception::golden_ = nullptr;
nn::NamedTensors* GoldenInception::weights_ = nullptr;

TEST_F(GoldenInception, FeaturesAndLogitsMatchPytorchFidOnColourAndGrayImages) {
  metrics::InceptionV3 net(*weights_, "synthetic weights", "synthetic");
  for (const char* name : {"rgb_37x53", "gray_28x28"}) {
    SCOPED_TRACE(name);
    const nlohmann::json& g = (*golden_)["images"][name];
    Shape shape;
    for (const auto& d : g["shape"]) shape.push_back(d.get<int64_t>());
    const Tensor images = test::hashed_tensor(shape, g["seed"].get<uint32_t>(), -1.0, 2.0);
    const metrics::FeatureBatch out = net.extract(images, /*want_logits=*/true);
    ASSERT_EQ(out.features.shape(), (Shape{shape[0], metrics::kInceptionFeatureDim}));
    ASSERT_EQ(out.logits.shape(), (Shape{shape[0], metrics::kInceptionNumLogits}));
    const std::string prefix = std::string(name) + " ";
    expect_close(every(out.features, 16), g["features_every_16"], prefix + "features[:, ::16]");
    expect_close(every(out.logits, 8), g["logits_every_8"], prefix + "logits[:, ::8]");
    expect_close(row_sums(out.features, false), g["features_sum"], prefix + "features.sum(1)");
    expect_close(row_sums(out.features, true), g["features_sum_sq"], prefix + "(features ** 2).sum(1)");
    expect_close(row_sums(out.logits, false), g["logits_sum"], prefix + "logits.sum(1)");
  }
}

// Each block pytorch-fid changes, on a (1, C, 4, 4) input: all 16 positions of every
// `channel_step`-th output channel, which include the pool branch's (the last channels).
TEST_F(GoldenInception, ChangedBlocksMatchPytorchFidOnTheirOwn) {
  using K = metrics::InceptionBlockKind;
  struct Case {
    const char* name;
    K kind;
    int64_t extra;
  };
  const std::map<std::string, Tensor> tensors = by_name(*weights_);
  for (const Case& c : {Case{"Mixed_5b", K::A, 32}, Case{"Mixed_6b", K::C, 128}, Case{"Mixed_7b", K::E1, 0},
                        Case{"Mixed_7c", K::E2, 0}}) {
    SCOPED_TRACE(c.name);
    const nlohmann::json& g = (*golden_)["blocks"][c.name];
    const int64_t in = g["in_channels"].get<int64_t>();
    metrics::InceptionBlock block(c.kind, c.name, in, c.extra, tensors, Device::cpu());
    NoGradGuard no_grad;
    const Tensor y = block(test::hashed_tensor(Shape{1, in, 4, 4}, g["seed"].get<uint32_t>(), 0.0, 1.0));
    ASSERT_EQ(y.shape(), (Shape{1, g["out_channels"].get<int64_t>(), 4, 4}));
    EXPECT_EQ(y.size(1), metrics::InceptionBlock::out_channels(c.kind, in, c.extra));
    expect_close(every(y, g["channel_step"].get<int64_t>()), g["out"], std::string(c.name) + " output");
  }
}

}  // namespace
}  // namespace gantry
