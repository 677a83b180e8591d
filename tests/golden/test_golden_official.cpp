// Forward parity with the official code (tests/golden/make_official_golden.py): tiny networks
// that NVlabs/stylegan2-ada-pytorch and brownvc/R3GAN built, pickled as their training loops do
// and ran, converted by scripts/convert_stylegan2_pkl.py. Gantry's G and D on the converted weights
// and the same z, labels and images give the official outputs: StyleGAN2 at 32 px (conditional,
// conv_clamp active, the label mapping network, minibatch std with 2 channels) and 64 px, in noise
// modes const, none and random (replayed, see the script) and with truncation (all layers, and the
// first 3); R3GAN at 32 px, conditional and unconditional. And one training step's gradients of
// every parameter (G's loss, D's loss, R1) in training mode, so the networks also train alike.
//
// Tolerance. Both sides compute in float32 with their own summation orders (oneDNN's JIT kernels
// here, PyTorch's CPU kernels there), through up to 5 resolutions of modulated convolutions;
// the references' magnitudes reach ~10. Allowed: |diff| <= 1e-5 * max|ref| + 1e-4 * |ref| per
// element. Measured worst |diff| / max|ref| over all outputs: see docs/models.md ("Weights from
// the official code"), a few 1e-7; a wrong mapping (a transposed table, a missing gain, a clamp in
// the wrong place, another noise map) moves outputs by >= 1e-2 of their scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "gan/config/model_config.h"
#include "gan/networks/style_generator.h"
#include "nn/noise_injection.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"
#include "support/test_paths.h"

namespace gantry {
namespace {

constexpr double kRelativeToScale = 1e-5, kRelative = 1e-4;
// Gradients through the whole network and (R1) its double backward: float32 on both sides.
constexpr double kGradientRelative = 1e-4;

// make_official_golden.py's noise_const_value: StyleGAN2's constant noise map of synthesis layer
// conv<conv> at resolution res, 1.3 sin(0.37 h + 0.91 w + 0.5 conv), in double rounded to f32.
Tensor noise_const_value(int64_t res, int conv) {
  std::vector<float> v(static_cast<size_t>(res * res));
  for (int64_t h = 0; h < res; ++h)
    for (int64_t w = 0; w < res; ++w)
      v[static_cast<size_t>(h * res + w)] =
          static_cast<float>(1.3 * std::sin(0.37 * static_cast<double>(h) + 0.91 * static_cast<double>(w) + 0.5 * conv));
  return ops::from_vector(v, Shape{res, res});
}

// make_official_golden.py's discriminator_image: 0.8 sin(0.21 (h + 1)(c + 1) + 0.13 w + 0.7 n).
Tensor discriminator_image(int64_t n, int64_t c, int64_t res) {
  std::vector<float> v;
  v.reserve(static_cast<size_t>(n * c * res * res));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t h = 0; h < res; ++h)
        for (int64_t w = 0; w < res; ++w)
          v.push_back(static_cast<float>(0.8 * std::sin(0.21 * static_cast<double>((h + 1) * (k + 1)) +
                                                        0.13 * static_cast<double>(w) + 0.7 * static_cast<double>(i))));
  return ops::from_vector(v, Shape{n, c, res, res});
}

// The part of G's images (N, C, R, R) a golden keeps: samples 0 and 1 (or 0), rows 0, R/2, R - 1.
Tensor stored_image(const Tensor& x) {
  const int64_t r = x.size(3);
  Tensor first = ops::slice(x, 0, 0, std::min<int64_t>(2, x.size(0)));
  return ops::concat({ops::slice(first, 2, 0, 1), ops::slice(first, 2, r / 2, r / 2 + 1), ops::slice(first, 2, r - 1, r)},
                     2);
}

::testing::AssertionResult official_close(const Tensor& got, const Tensor& ref, const std::string& what) {
  if (got.shape() != ref.shape())
    return ::testing::AssertionFailure() << what << ": expected shape " << ref.shape().str() << ", found "
                                         << got.shape().str();
  const std::vector<float> g = got.to_vector(), r = ref.to_vector();
  double scale = 0, worst_abs = 0, worst_excess = 0;
  for (float v : r) scale = std::max(scale, std::abs(static_cast<double>(v)));
  size_t bad = 0, worst = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double diff = std::abs(static_cast<double>(g[i]) - r[i]);
    const double allowed = kRelativeToScale * scale + kRelative * std::abs(static_cast<double>(r[i]));
    if (!(diff <= allowed)) ++bad;
    if (diff > worst_abs) worst_abs = diff;
    if (!(diff / allowed <= worst_excess)) {
      worst_excess = diff / allowed;
      worst = i;
    }
  }
  // Stated for docs/models.md's parity table.
  std::printf("official parity %s: max |diff| %.3g, max |diff| / max |ref| %.3g (max |ref| %.3g)\n", what.c_str(),
              worst_abs, worst_abs / scale, scale);
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << r.size() << " values differ; worst at "
                                       << worst << ": " << g[worst] << " vs the official " << r[worst];
}

class OfficialCase {
 public:
  explicit OfficialCase(const std::string& name)
      : name_(name), file_(nn::read_safetensors(testing::golden_dir() + "/official_" + name + ".safetensors")),
        config_(nlohmann::json::parse(file_.metadata.at("config"))),
        outputs_(nlohmann::json::parse(file_.metadata.at("outputs"))) {
    const nlohmann::json& data = config_["data"];
    image_shape_ = data["image_shape"].get<std::vector<int64_t>>();
    classes_ = data["use_labels"].get<bool>() ? data["num_classes"].get<int64_t>() : 0;
    nlohmann::json g = config_["generator"], d = config_["discriminator"];
    // The converter writes StyleGAN2-ADA's default mixing (0.9) into the config; the training-mode
    // gradients are compared without it, as the official networks compute them (the loss mixes).
    if (g.contains("style_mixing_prob")) g["style_mixing_prob"] = 0.0;
    nets_ = gan::resolve_networks_config(g, d, image_shape_, classes_, false);
    generator_ = build("generator.");
    discriminator_ = build("discriminator.");
  }

  // Every output of the golden computed by Gantry and compared.
  void check_every_output() {
    NoGradGuard no_grad;
    const Tensor z = file_.at("input.z");
    const Tensor labels = file_.at("input.labels").to(DType::I64);
    for (const auto& [name, spec] : outputs_.items()) {
      SCOPED_TRACE(name_ + " " + name);
      const Tensor ref = file_.at("output." + name);
      Tensor got;
      if (spec["network"] == "discriminator") {
        const Tensor x = spec["input"] == "image" ? discriminator_image(z.size(0), image_shape_[0], image_shape_[2])
                                                  : generate(z, labels, spec);
        got = classes_ > 0 ? discriminator_->forward(x, labels) : discriminator_->forward(x);
      } else {
        ASSERT_EQ(spec["network"], "generator") << "(this test runs G and D)";
        const int64_t batch = spec.value("batch", z.size(0));
        got = stored_image(generate(ops::slice(z, 0, 0, batch), ops::slice(labels, 0, 0, batch), spec));
      }
      EXPECT_TRUE(official_close(got, ref, name_ + " " + name));
    }
  }

  // One training step's gradients against the official networks' (make_official_golden.py,
  // training_gradients): both networks in training mode, StyleGAN2's noise mode const; G's
  // non-saturating loss w.r.t. G's parameters, D's loss and R1 (gamma 2) w.r.t. D's, each
  // parameter's gradient summarised as its norm and a fixed projection.
  void check_training_gradients() {
    const nlohmann::json expected = nlohmann::json::parse(file_.metadata.at("gradients"));
    const Tensor z = file_.at("input.z");
    const Tensor labels = file_.at("input.labels").to(DType::I64);
    const Tensor image = discriminator_image(z.size(0), image_shape_[0], image_shape_[2]);
    generator_->train();
    discriminator_->train();
    auto critic = [&](const Tensor& x) { return classes_ > 0 ? discriminator_->forward(x, labels) : discriminator_->forward(x); };
    const bool stylegan2 = config_["generator"]["type"] == "stylegan2";
    const nlohmann::json spec = stylegan2 ? nlohmann::json{{"noise_mode", "const"}} : nlohmann::json::object();
    const Tensor fake = generate(z, labels, spec);
    expect_gradients(expected.at("generator"), "generator", *generator_, ops::mean(ops::softplus(ops::neg(critic(fake)))));
    expect_gradients(expected.at("discriminator"), "discriminator", *discriminator_,
                     ops::add(ops::mean(ops::softplus(critic(fake.detach()))), ops::mean(ops::softplus(ops::neg(critic(image))))));
    Tensor x = image.clone();
    x.set_requires_grad(true);
    const Tensor dx = autograd::grad({ops::sum(critic(x))}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    expect_gradients(expected.at("r1"), "r1", *discriminator_, ops::mean(ops::sum(ops::square(dx), {1, 2, 3})));
  }

 private:
  // d loss / d each parameter of `module`, summarised as make_official_golden.py's gradient_summary
  // (norm, sum g_i sin(0.7 i + 0.3)), against the official summaries: every parameter on both sides,
  // each value within kGradientRelative of the loss's largest norm plus of itself.
  void expect_gradients(const nlohmann::json& expected, const std::string& loss_name, nn::Module& module, const Tensor& loss) {
    generator_->zero_grad();
    discriminator_->zero_grad();
    loss.backward();
    double scale = 0;
    for (const auto& [name, summary] : expected.items()) scale = std::max(scale, summary[0].get<double>());
    size_t seen = 0;
    double worst = 0;
    for (const auto& [name, param] : module.named_parameters()) {
      SCOPED_TRACE(name_ + " " + loss_name + " gradient of " + name);
      ASSERT_TRUE(expected.contains(name)) << "a parameter the official network does not have";
      ++seen;
      const std::vector<float> g = param.grad().defined() ? param.grad().to_vector() : std::vector<float>(param.numel(), 0.f);
      double norm = 0, projection = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        norm += static_cast<double>(g[i]) * g[i];
        projection += static_cast<double>(g[i]) * std::sin(0.7 * static_cast<double>(i) + 0.3);
      }
      norm = std::sqrt(norm);
      const double want_norm = expected[name][0].get<double>(), want_projection = expected[name][1].get<double>();
      worst = std::max({worst, std::abs(norm - want_norm) / scale, std::abs(projection - want_projection) / scale});
      EXPECT_NEAR(norm, want_norm, kGradientRelative * (scale + std::abs(want_norm)));
      EXPECT_NEAR(projection, want_projection, kGradientRelative * (scale + std::abs(want_projection)));
    }
    EXPECT_EQ(seen, expected.size()) << name_ << " " << loss_name << ": the official network has more parameters";
    // Stated for docs/models.md's parity table.
    std::printf("official gradient parity %s %s: %zu parameters, max |diff| / max norm %.3g (max norm %.3g)\n",
                name_.c_str(), loss_name.c_str(), seen, worst, scale);
  }

  // Gantry's network from the converter's config with the golden's weights and the constant noise
  // maps computed here (or, for noise mode random, the official layers' draws).
  nn::ModulePtr build(const std::string& prefix) {
    nn::ModulePtr m = (prefix == "generator." ? nets_.generator : nets_.discriminator)(Device::cpu(), RngKey{1, 1});
    nn::NamedTensors state;
    for (const auto& [name, t] : file_.tensors)
      if (name.rfind(prefix, 0) == 0) state.emplace_back(name.substr(prefix.size()), t);
    for (const auto& [name, t] : m->named_buffers()) {
      const size_t at = name.find(".conv");
      if (name.size() < 12 || name.compare(name.size() - 12, 12, ".noise_const") != 0) continue;
      const int64_t block = std::stoll(name.substr(std::string("synthesis.").size()));
      state.emplace_back(name, noise_const_value(int64_t{4} << block, name[at + 5] - '0'));
    }
    nn::load_state_dict(*m, state, file_.source);
    m->eval();
    return m;
  }

  // G's images as the spec says (noise mode, truncation).
  Tensor generate(const Tensor& z, const Tensor& labels, const nlohmann::json& spec) {
    if (!spec.contains("noise_mode")) return classes_ > 0 ? generator_->forward(z, labels) : generator_->forward(z);
    const std::string mode = spec["noise_mode"];
    gan::TruncationScope truncation(*generator_, spec.value("psi", 1.0f), spec.value("cutoff", int64_t{0}), "psi");
    // Random noise: the official layers' draws, swapped into the constant maps for this call.
    std::vector<std::pair<Tensor, Tensor>> swapped;  // (buffer, its own values)
    if (mode == "random") {
      for (const auto& [name, buffer] : generator_->named_buffers()) {
        const std::string recorded = "random_noise.generator." + name;
        if (!has_tensor(recorded)) continue;
        swapped.emplace_back(buffer, buffer.clone());
        ops::copy_(buffer, file_.at(recorded));
      }
      EXPECT_FALSE(swapped.empty()) << "no recorded noise";
    }
    gan::NoiseModeScope noise(*generator_, mode == "random" ? nn::NoiseMode::Const : nn::parse_noise_mode(mode, "mode"),
                              "noise_mode");
    const Tensor out = classes_ > 0 ? generator_->forward(z, labels) : generator_->forward(z);
    for (const auto& [buffer, own] : swapped) ops::copy_(buffer, own);
    return out;
  }

  bool has_tensor(const std::string& name) const {
    for (const auto& entry : file_.tensors)
      if (entry.first == name) return true;
    return false;
  }

  std::string name_;
  nn::SafetensorsContents file_;
  nlohmann::json config_, outputs_;
  std::vector<int64_t> image_shape_;
  int64_t classes_ = 0;
  gan::NetworksConfig nets_;
  nn::ModulePtr generator_, discriminator_;
};

TEST(GoldenOfficial, StyleGan2At32PixelsConditionalWithClampEveryNoiseModeAndTruncation) {
  OfficialCase("stylegan2_32").check_every_output();
}

TEST(GoldenOfficial, StyleGan2At64Pixels) { OfficialCase("stylegan2_64").check_every_output(); }

TEST(GoldenOfficial, R3ganAt32PixelsConditional) { OfficialCase("r3gan_32").check_every_output(); }

TEST(GoldenOfficial, R3ganAt32PixelsUnconditional) { OfficialCase("r3gan_32_unconditional").check_every_output(); }

TEST(GoldenOfficial, StyleGan2TrainingGradientsAt32PixelsConditionalWithClamp) {
  OfficialCase("stylegan2_32").check_training_gradients();
}

TEST(GoldenOfficial, StyleGan2TrainingGradientsAt64Pixels) { OfficialCase("stylegan2_64").check_training_gradients(); }

TEST(GoldenOfficial, R3ganTrainingGradientsAt32PixelsConditional) { OfficialCase("r3gan_32").check_training_gradients(); }

TEST(GoldenOfficial, R3ganTrainingGradientsAt32PixelsUnconditional) {
  OfficialCase("r3gan_32_unconditional").check_training_gradients();
}

}  // namespace
}  // namespace gantry
