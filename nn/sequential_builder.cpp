#include "nn/sequential_builder.h"

#include <algorithm>
#include <span>

#include "core/json_reader.h"

#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/instance_norm.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/reshape.h"
#include "nn/rms_norm.h"
#include "nn/spectral_norm.h"
#include "nn/upsample.h"

namespace gantry::nn {

namespace {

using Dims = std::vector<int64_t>;

std::string dims_str(const Dims& d) { return Shape(d).str(); }

[[noreturn]] void shape_error(const JsonReader& f, const std::string& type, const char* expected,
                              const Dims& in) {
  GANTRY_FAIL(f.path(), ": ", type, " expects an input of shape ", expected, ", found ",
              dims_str(in), " (the output of the previous layer)");
}

// Each layer type's keys (core/config_key.h), read through their declarations; "type" is read
// first, to pick the table.
constexpr ConfigKey kIn = int_key("in", "", "the input size; must equal the inferred one")
                              .at_least(1)
                              .documented_default("inferred (written back)");
constexpr ConfigKey kOut = int_key("out", "", "the output size").at_least(1);
constexpr ConfigKey kBias = bool_key("bias", "true", "a learned bias");
constexpr ConfigKey kSpectralNorm = bool_key("spectral_norm", "false", "spectral norm on the weight");
constexpr ConfigKey kEps = number_key("eps", "1e-5", "added to the variance").above(0);
constexpr ConfigKey kAffine = bool_key("affine", "true", "a learned scale and shift");
constexpr ConfigKey kKernel = int_key("kernel", "", "the kernel size").at_least(1);
constexpr ConfigKey kStride = int_key("stride", "1", "the stride").at_least(1);
constexpr ConfigKey kPadding = int_key("padding", "0", "zero padding on every side").at_least(0);
constexpr ConfigKey kDilation = int_key("dilation", "1", "the dilation").at_least(1);

constexpr ConfigKey kLinearKeys[] = {kIn, kOut, kBias, kSpectralNorm};
constexpr ConfigKey kConvKeys[] = {
    kIn,
    kOut,
    kKernel,
    kStride,
    kPadding,
    kDilation,
    kBias,
    kSpectralNorm,
};
constexpr ConfigKey kConvTransposeKeys[] = {
    kIn,
    kOut,
    kKernel,
    kStride,
    kPadding,
    kDilation,
    int_key("output_padding", "0", "added to one side of the output").at_least(0),
    kBias,
    kSpectralNorm,
};
constexpr ConfigKey kBatchNormKeys[] = {
    kIn,
    kEps,
    number_key("momentum", "0.1", "the running statistics' momentum").in(0, 1),
    kAffine,
    bool_key("track_running_stats", "true", "keep running statistics for eval mode"),
};
constexpr ConfigKey kLayerNormKeys[] = {kEps, kAffine};
constexpr ConfigKey kInstanceNormKeys[] = {kIn, kEps, bool_key("affine", "false", "a learned scale and shift")};
constexpr ConfigKey kEmbeddingKeys[] = {
    int_key("num", "", "the number of indices").at_least(1),
    int_key("dim", "", "the embedding's size").at_least(1),
};
constexpr ConfigKey kDropoutKeys[] = {number_key("p", "0.5", "the probability of zeroing").in(0, 1).below(1)};
constexpr ConfigKey kLeakyReluKeys[] = {number_key("slope", "0.01", "the negative slope").at_least(0)};
constexpr ConfigKey kGeluKeys[] = {
    string_key("approximate", R"("tanh")", "the form; the exact (erf) one is not implemented").one_of("tanh").expecting(R"("tanh")"),
};
constexpr ConfigKey kReshapeKeys[] = {
    array_key("shape", "", "per-example sizes, one of them may be -1").expecting("a non-empty list of integers"),
};
constexpr ConfigKey kUpsampleKeys[] = {
    int_key("scale", "2", "the factor").at_least(1),
    string_key("mode", R"("nearest")", "the interpolation").one_of("nearest").expecting(R"("nearest")"),
};
constexpr ConfigKey kRmsNormKeys[] = {
    number_key("eps", "1e-6", "added to the mean square (LLaMA's; torch's default is 1.19e-7)").above(0),
    bool_key("affine", "true", "a learned scale (the weight)"),
};

}  // namespace

std::vector<std::pair<std::string, std::span<const ConfigKey>>> sequential_layer_keys() {
  return {{"linear", kLinearKeys},         {"conv2d", kConvKeys},
          {"conv_transpose2d", kConvTransposeKeys}, {"batch_norm1d", kBatchNormKeys},
          {"batch_norm2d", kBatchNormKeys}, {"layer_norm", kLayerNormKeys},
          {"instance_norm2d", kInstanceNormKeys}, {"embedding", kEmbeddingKeys},
          {"dropout", kDropoutKeys},       {"relu", {}},
          {"leaky_relu", kLeakyReluKeys},  {"tanh", {}},
          {"sigmoid", {}},                 {"silu", {}},
          {"gelu", kGeluKeys},             {"flatten", {}},
          {"reshape", kReshapeKeys},       {"upsample", kUpsampleKeys},
          {"rms_norm", kRmsNormKeys}};
}

namespace {

// The optional "in" key: must equal the inferred size; written back either way.
void check_in(JsonReader& f, int64_t inferred) {
  const bool given = f.has("in");
  f.read("in", inferred);
  const int64_t in = f.read_int("in");
  GANTRY_CHECK(!given || in == inferred, f.key_path("in"), ": expected ", inferred,
               " (inferred from the input shape), found ", in);
}

int checked_int(JsonReader& f, const std::string& key, int64_t value) {
  if (value > (1 << 20)) f.fail(key, "an integer <= 1048576");
  return static_cast<int>(value);
}

ModulePtr maybe_spectral(JsonReader& f, ModulePtr m, RngKey key) {
  if (f.read_bool("spectral_norm")) return spectral_norm(std::move(m), "weight", {}, key);
  return m;
}

ModulePtr build_conv(JsonReader& f, const std::string& type, Dims& shape, RngKey key) {
  bool transposed = type == "conv_transpose2d";
  if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
  check_in(f, shape[0]);
  int64_t out = f.read_int("out");
  ConvOptions o;
  int k = checked_int(f, "kernel", f.read_int("kernel"));
  o.stride = checked_int(f, "stride", f.read_int("stride"));
  o.padding = checked_int(f, "padding", f.read_int("padding"));
  o.dilation = checked_int(f, "dilation", f.read_int("dilation"));
  if (transposed) {
    o.output_padding = checked_int(f, "output_padding", f.read_int("output_padding"));
    if (o.output_padding >= std::max(o.stride, o.dilation))
      f.fail("output_padding", "an integer smaller than max(stride, dilation) = " +
                                   std::to_string(std::max(o.stride, o.dilation)));
  }
  o.bias = f.read_bool("bias");
  ModulePtr m;
  int64_t h, w;
  if (transposed) {
    auto c = std::make_shared<ConvTranspose2d>(shape[0], out, k, o, key);
    h = c->output_size(shape[1]);
    w = c->output_size(shape[2]);
    m = c;
  } else {
    auto c = std::make_shared<Conv2d>(shape[0], out, k, o, key);
    h = c->output_size(shape[1]);
    w = c->output_size(shape[2]);
    m = c;
  }
  GANTRY_CHECK(h > 0 && w > 0, f.path(), ": ", type, " with kernel ", k, ", stride ", o.stride,
               ", padding ", o.padding, ", dilation ", o.dilation, " gives an empty output for "
               "input ", dims_str(shape), " (output ", h, " x ", w, ")");
  shape = {out, h, w};
  return maybe_spectral(f, m, key);
}

ModulePtr build_layer(JsonReader& f, const std::string& type, Dims& shape, RngKey key) {
  if (type == "linear") {
    if (shape.size() != 1) shape_error(f, type, "(F,) (add a flatten layer first)", shape);
    check_in(f, shape[0]);
    int64_t out = f.read_int("out");
    bool bias = f.read_bool("bias");
    ModulePtr m = std::make_shared<Linear>(shape[0], out, bias, key);
    shape = {out};
    return maybe_spectral(f, m, key);
  }
  if (type == "conv2d" || type == "conv_transpose2d") return build_conv(f, type, shape, key);
  if (type == "batch_norm1d" || type == "batch_norm2d") {
    bool two_d = type == "batch_norm2d";
    if (two_d && shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
    if (!two_d && shape.size() != 1 && shape.size() != 2) shape_error(f, type, "(C,) or (C, L)", shape);
    check_in(f, shape[0]);
    BatchNormOptions o;
    o.eps = f.read_number("eps");
    o.momentum = f.read_number("momentum");
    o.affine = f.read_bool("affine");
    o.track_running_stats = f.read_bool("track_running_stats");
    if (two_d) return std::make_shared<BatchNorm2d>(shape[0], o);
    return std::make_shared<BatchNorm1d>(shape[0], o);
  }
  if (type == "layer_norm") {
    double eps = f.read_number("eps");
    return std::make_shared<LayerNorm>(shape, eps, f.read_bool("affine"));
  }
  if (type == "instance_norm2d") {
    if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
    check_in(f, shape[0]);
    double eps = f.read_number("eps");
    return std::make_shared<InstanceNorm2d>(shape[0], eps, f.read_bool("affine"));
  }
  if (type == "embedding") {
    if (shape.size() != 1) shape_error(f, type, "(L,) of indices", shape);
    int64_t num = f.read_int("num"), dim = f.read_int("dim");
    shape = {shape[0], dim};
    return std::make_shared<Embedding>(num, dim, key);
  }
  if (type == "dropout") return std::make_shared<Dropout>(f.read_number("p"));
  if (type == "relu") return std::make_shared<ReLU>();
  if (type == "tanh") return std::make_shared<Tanh>();
  if (type == "sigmoid") return std::make_shared<Sigmoid>();
  if (type == "leaky_relu") return std::make_shared<LeakyReLU>(f.read_number("slope"));
  if (type == "silu") return std::make_shared<SiLU>();
  if (type == "gelu") {
    f.read("approximate");  // "tanh", the one form
    return std::make_shared<GELU>(GELU::Approximation::Tanh);
  }
  if (type == "flatten") {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    shape = {n};
    return std::make_shared<Flatten>();
  }
  if (type == "reshape") {
    Dims sizes = f.read_int_list("shape");
    int64_t n = 1, known = 1, infer = -1;
    for (int64_t d : shape) n *= d;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
      else if (sizes[i] > 0) known *= sizes[i];
      else f.fail("shape", "positive sizes with at most one -1");
    }
    if (infer >= 0 && n % known == 0) sizes[infer] = n / known;
    int64_t product = 1;
    for (int64_t d : sizes) product *= d;
    GANTRY_CHECK(product == n && static_cast<int>(sizes.size()) < kMaxRank, f.key_path("shape"),
                 ": cannot reshape ", dims_str(shape), " (", n, " elements) to ",
                 f.read("shape").dump());
    shape = sizes;
    return std::make_shared<Reshape>(sizes);
  }
  if (type == "upsample") {
    int64_t scale = f.read_int("scale");
    f.read("mode");  // "nearest", the one mode
    if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
    int s = checked_int(f, "scale", scale);
    shape = {shape[0], shape[1] * s, shape[2] * s};
    return std::make_shared<Upsample>(s);
  }
  if (type == "rms_norm") {  // over the last dimension, as torch.nn.RMSNorm
    if (shape.size() != 1 && shape.size() != 2) shape_error(f, type, "(D,) or (T, D)", shape);
    double eps = f.read_number("eps");
    return std::make_shared<RMSNorm>(shape.back(), eps, f.read_bool("affine"));
  }
  GANTRY_FAIL("not reached: build_sequential checked the type");
}

}  // namespace

BuiltSequential build_sequential(const nlohmann::json& layers, const std::vector<int64_t>& input_shape,
                                 const std::string& path, RngKey key) {
  GANTRY_CHECK(layers.is_array() && !layers.empty(), path,
               ": expected a non-empty list of layers, found ", layers.dump());
  GANTRY_CHECK(!input_shape.empty() && input_shape.size() <= 3, path,
               ": expected an input shape (C, H, W), (C, L) or (F,), found ",
               Shape(input_shape).str());
  for (int64_t d : input_shape)
    GANTRY_CHECK(d > 0, path, ": expected positive input sizes, found ", Shape(input_shape).str());
  BuiltSequential out;
  out.net = std::make_shared<Sequential>();
  out.resolved = nlohmann::json::array();
  Dims shape = input_shape;
  for (size_t i = 0; i < layers.size(); ++i) {
    nlohmann::json layer = layers[i];  // the reader writes defaults back into it
    JsonReader f(layer, path + "[" + std::to_string(i) + "]");
    const std::string type = f.read_type();
    std::string known;
    bool listed = false;
    for (const auto& [name, keys] : sequential_layer_keys()) {
      known += known.empty() ? "" : ", ";
      known += name;
      if (name != type) continue;
      f.add_keys(keys);
      listed = true;
    }
    GANTRY_CHECK(listed, f.key_path("type"), ": unknown layer type \"", type, "\" (known: ", known, ")");
    ModulePtr m = build_layer(f, type, shape, init::key_for(key, std::to_string(i)));
    f.finish();
    out.net->push_back(std::move(m));
    out.resolved.push_back(std::move(layer));
  }
  out.output_shape = shape;
  return out;
}

}  // namespace gantry::nn
