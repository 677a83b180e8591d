#include "metrics/inception_v3.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/json_reader.h"
#include "metrics/sequential_feature_network.h"
#include "nn/safetensors.h"

namespace gantry::metrics {

namespace {

const std::vector<InceptionConvSpec>& stem_specs() {
  static const std::vector<InceptionConvSpec> specs = {
      {"Conv2d_1a_3x3", 3, 32, 3, 3, 2, 0, 0},  {"Conv2d_2a_3x3", 32, 32, 3, 3, 1, 0, 0},
      {"Conv2d_2b_3x3", 32, 64, 3, 3, 1, 1, 1}, {"Conv2d_3b_1x1", 64, 80, 1, 1, 1, 0, 0},
      {"Conv2d_4a_3x3", 80, 192, 3, 3, 1, 0, 0}};
  return specs;
}

struct BlockSpec {
  const char* name;
  InceptionBlockKind kind;
  int64_t in, extra;
};

const std::vector<BlockSpec>& block_specs() {
  using K = InceptionBlockKind;
  static const std::vector<BlockSpec> specs = {
      {"Mixed_5b", K::A, 192, 32}, {"Mixed_5c", K::A, 256, 64},  {"Mixed_5d", K::A, 288, 64},
      {"Mixed_6a", K::B, 288, 0},  {"Mixed_6b", K::C, 768, 128}, {"Mixed_6c", K::C, 768, 160},
      {"Mixed_6d", K::C, 768, 160}, {"Mixed_6e", K::C, 768, 192}, {"Mixed_7a", K::D, 768, 0},
      {"Mixed_7b", K::E1, 1280, 0}, {"Mixed_7c", K::E2, 2048, 0}};
  return specs;
}

std::string list_expected() {
  std::ostringstream s;
  for (const auto& [name, shape] : inception_v3_expected_tensors()) s << "\n  " << name << " " << shape.str();
  return s.str();
}

// Every mismatch at once (missing, unexpected, wrong shape or dtype), then the full expected list.
std::map<std::string, Tensor> checked_tensors(const nn::NamedTensors& tensors, const std::string& source) {
  std::map<std::string, Tensor> by_name;
  for (const auto& [name, t] : tensors) by_name.emplace(name, t);
  std::ostringstream problems;
  std::set<std::string> expected_names;
  for (const auto& [name, shape] : inception_v3_expected_tensors()) {
    expected_names.insert(name);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      problems << "\n  missing " << name << " " << shape.str();
    } else if (it->second.shape() != shape) {
      problems << "\n  " << name << ": expected shape " << shape.str() << ", found " << it->second.shape().str();
    } else if (it->second.dtype() == DType::I64 || it->second.dtype() == DType::U8) {
      problems << "\n  " << name << ": expected a floating dtype, found " << to_string(it->second.dtype());
    }
  }
  for (const auto& [name, t] : by_name)
    if (!expected_names.count(name)) problems << "\n  unexpected " << name << " " << t.shape().str();
  GANTRY_CHECK(problems.str().empty(), source, ": not the FID Inception-v3 weights "
               "(scripts/convert_inception_weights.py writes them):", problems.str(), "\nexpected tensors:",
               list_expected());
  for (auto& [name, t] : by_name)
    if (t.dtype() != DType::F32) t = t.to(DType::F32);
  return by_name;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> inception_v3_expected_tensors() {
  std::vector<std::pair<std::string, Shape>> all;
  const auto add = [&all](const InceptionConvSpec& spec) {
    for (auto& entry : inception_conv_tensors(spec)) all.push_back(std::move(entry));
  };
  for (const InceptionConvSpec& spec : stem_specs()) add(spec);
  for (const BlockSpec& b : block_specs())
    for (const InceptionConvSpec& spec : InceptionBlock::conv_specs(b.kind, b.name, b.in, b.extra)) add(spec);
  all.emplace_back("fc.weight", Shape{kInceptionNumLogits, kInceptionFeatureDim});
  all.emplace_back("fc.bias", Shape{kInceptionNumLogits});
  return all;
}

InceptionV3::InceptionV3(nlohmann::json& spec, const std::string& path) {
  static constexpr ConfigKey kKeys[] = {
      string_key("type", "", "the network").one_of("inception_v3"),
      string_key("weights", "", "the converted safetensors file"),
  };
  JsonReader r(spec, path, kKeys);
  r.read("type");
  const std::string weights = r.read_string("weights");
  r.finish();
  GANTRY_CHECK(std::filesystem::is_regular_file(weights), r.key_path("weights"), ": Inception-v3 weights ", weights,
               " not found (Gantry never downloads them; scripts/convert_inception_weights.py converts "
               "pytorch-fid's pt_inception-2015-12-05-6726825d.pth, see docs/metrics.md); expected a "
               "safetensors file with the tensors:", list_expected());
  nn::SafetensorsContents contents = nn::read_safetensors(weights);
  build(contents.tensors, weights, file_hash(weights));
}

InceptionV3::InceptionV3(const nn::NamedTensors& tensors, const std::string& source, const std::string& weights_id,
                         Device device)
    : device_(device) {
  build(tensors, source, weights_id);
}

void InceptionV3::build(const nn::NamedTensors& tensors, const std::string& source, const std::string& weights_id) {
  const std::map<std::string, Tensor> by_name = checked_tensors(tensors, source);
  for (const InceptionConvSpec& spec : stem_specs()) stem_.emplace_back(spec, by_name, device_);
  for (const BlockSpec& b : block_specs()) blocks_.emplace_back(b.kind, b.name, b.in, b.extra, by_name, device_);
  fc_weight_ = by_name.at("fc.weight").to(device_);
  fc_bias_ = by_name.at("fc.bias").to(device_);
  identity_ = nlohmann::json{{"type", "inception_v3"},
                             {"variant", "pytorch-fid FIDInceptionV3 (TF 2015-12-05)"},
                             {"weights_fnv1a", weights_id},
                             {"resize", kInceptionResize}}
                  .dump();
}

Tensor InceptionV3::prepare(const Tensor& images) const {
  GANTRY_CHECK(images.defined() && images.dim() == 4 && images.dtype() == DType::F32 &&
                   (images.size(1) == 1 || images.size(1) == 3),
               "Inception-v3: expected f32 images (N, 1 or 3, H, W) in [-1, 1], found ",
               images.defined() ? images.str() : "none");
  Tensor x = images.to(device_);
  if (x.size(1) == 1) x = ops::concat({x, x, x}, 1);  // grayscale as pytorch-fid: repeated
  if (x.size(2) != kInceptionInputSize || x.size(3) != kInceptionInputSize)
    x = ops::resize_bilinear(x, kInceptionInputSize, kInceptionInputSize);
  return x;
}

Tensor InceptionV3::features(const Tensor& input) const {
  Tensor x = input;  // (N, 3, 299, 299)
  x = stem_[0](x);   // (N, 32, 149, 149)
  x = stem_[1](x);   // (N, 32, 147, 147)
  x = stem_[2](x);   // (N, 64, 147, 147)
  x = ops::max_pool2d(x, 3, 2);  // (N, 64, 73, 73)
  x = stem_[3](x);   // (N, 80, 73, 73)
  x = stem_[4](x);   // (N, 192, 71, 71)
  x = ops::max_pool2d(x, 3, 2);  // (N, 192, 35, 35)
  for (const InceptionBlock& block : blocks_) x = block(x);  // (N, 2048, 8, 8)
  return ops::mean(x, {2, 3});  // (N, 2048)
}

FeatureBatch InceptionV3::extract(const Tensor& images, bool want_logits) {
  NoGradGuard no_grad;
  // A 299x299 image holds ~5.5 MB per 64 channels at 147x147: chunks of kChunk images keep the
  // activations near 200 MB whatever batch the caller passes (the metrics default to 250).
  constexpr int64_t kChunk = 32;
  GANTRY_CHECK(images.defined() && images.dim() == 4 && images.size(0) >= 1,
               "Inception-v3: expected images (N >= 1, C, H, W), found ", images.defined() ? images.str() : "none");
  std::vector<FeatureBatch> chunks;
  for (int64_t begin = 0; begin < images.size(0); begin += kChunk) {
    const Tensor part = ops::slice(images, 0, begin, std::min(images.size(0), begin + kChunk));
    const Tensor pooled = features(prepare(part));  // (n, 2048)
    FeatureBatch out;
    out.features = pooled.to(Device::cpu());
    if (want_logits) out.logits = ops::linear(pooled, fc_weight_, fc_bias_).to(Device::cpu());
    chunks.push_back(std::move(out));
  }
  return concat_feature_batches(chunks);
}

std::unique_ptr<FeatureNetwork> InceptionV3::clone_to(Device device) const {
  std::unique_ptr<InceptionV3> copy(new InceptionV3());
  copy->device_ = device;
  for (const FoldedConv& c : stem_) copy->stem_.push_back(c.to(device));
  for (const InceptionBlock& b : blocks_) copy->blocks_.push_back(b.to(device));
  copy->fc_weight_ = fc_weight_.to(device).clone();
  copy->fc_bias_ = fc_bias_.to(device).clone();
  copy->identity_ = identity_;
  return copy;
}

}  // namespace gantry::metrics
