#include "metrics/registered_feature_network.h"

#include <filesystem>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/ops/ops.h"
#include "gan/networks.h"
#include "metrics/image_adapter.h"
#include "metrics/sequential_feature_network.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"

namespace gantry::metrics {

namespace {

std::string expected_tensors(const nn::Module& net) {
  std::ostringstream out;
  for (const auto& [name, t] : net.state_dict()) out << "\n  " << name << " " << t.shape().str();
  return out.str();
}

}  // namespace

RegisteredFeatureNetwork::RegisteredFeatureNetwork(nlohmann::json& spec, const std::string& path) {
  JsonReader r(spec, path);
  GANTRY_CHECK(r.require_string("type") == "discriminator", r.key_path("type"), ": expected \"discriminator\"");
  input_shape_ = r.require_int_list("input_shape");
  GANTRY_CHECK(input_shape_.size() == 3, r.key_path("input_shape"), ": expected [C, H, W], found ",
               input_shape_.size(), " sizes");
  nlohmann::json& config = r.object("network");
  gan::NetworkContext ctx;
  ctx.image_shape = input_shape_;
  const gan::BuiltNetwork built = gan::make_discriminator(config, r.key_path("network"), ctx);
  net_ = std::dynamic_pointer_cast<nn::Sequential>(built.fn(Device::cpu(), RngKey{0, 0}));
  GANTRY_CHECK(net_ != nullptr, r.key_path("network"), ": expected a network whose top level is a Sequential "
               "(an unconditional discriminator), found another module");
  const int64_t layer = r.require_int("feature_layer");
  GANTRY_CHECK(layer >= 0 && layer < static_cast<int64_t>(net_->size()), r.key_path("feature_layer"),
               ": expected a child index in [0, ", net_->size(), "), found ", layer);
  feature_layer_ = static_cast<size_t>(layer);
  const std::string weights = r.require_string("weights");
  const std::string prefix = r.get_string("prefix", "");
  r.finish();
  GANTRY_CHECK(std::filesystem::is_regular_file(weights), r.key_path("weights"), ": weights ", weights,
               " not found; expected a safetensors file with the tensors", expected_tensors(*net_));
  const nn::SafetensorsContents contents = nn::read_safetensors(weights);
  nn::NamedTensors mine;
  for (const auto& [name, t] : contents.tensors)
    if (name.rfind(prefix, 0) == 0) mine.emplace_back(name.substr(prefix.size()), t);
  try {
    nn::load_state_dict(*net_, mine, weights + (prefix.empty() ? "" : " (tensors " + prefix + "*)"));
  } catch (const Error& e) {
    GANTRY_FAIL("feature network weights ", weights, " do not fit ", path, ": ", e.what(),
                "\nexpected tensors (after the prefix \"", prefix, "\"):", expected_tensors(*net_));
  }
  net_->eval();
  {  // the feature size, from one zero image
    NoGradGuard no_grad;
    Shape one{1};
    for (int64_t d : input_shape_) one.push_back(d);
    Tensor x = ops::zeros(one);
    for (size_t i = 0; i <= feature_layer_; ++i) x = (*net_)[i]->forward(x);
    feature_dim_ = x.numel();
  }
  identity_ = nlohmann::json{{"type", "discriminator"},
                             {"network", config},
                             {"input_shape", input_shape_},
                             {"feature_layer", layer},
                             {"prefix", prefix},
                             {"weights_fnv1a", file_hash(weights)},
                             {"resize", "bilinear, align_corners=False (torch.nn.functional.interpolate) when the "
                                        "image size differs"}}
                  .dump();
}

FeatureBatch RegisteredFeatureNetwork::extract(const Tensor& images, bool want_logits) {
  GANTRY_CHECK(!want_logits, "feature network (discriminator): logits asked for, but it has none");
  NoGradGuard no_grad;
  Tensor x = adapt_images(images.to(net_->device()), input_shape_);
  for (size_t i = 0; i <= feature_layer_; ++i) x = (*net_)[i]->forward(x);
  FeatureBatch out;
  out.features = ops::reshape(x, Shape{x.size(0), feature_dim_}).to(Device::cpu());
  return out;
}

std::unique_ptr<FeatureNetwork> RegisteredFeatureNetwork::clone_to(Device device) const {
  std::unique_ptr<RegisteredFeatureNetwork> copy(new RegisteredFeatureNetwork());
  copy->net_ = std::static_pointer_cast<nn::Sequential>(net_->clone(device));
  copy->net_->eval();
  copy->input_shape_ = input_shape_;
  copy->feature_layer_ = feature_layer_;
  copy->feature_dim_ = feature_dim_;
  copy->identity_ = identity_;
  return copy;
}

}  // namespace gantry::metrics
