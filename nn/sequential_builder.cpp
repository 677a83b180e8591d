#include "nn/sequential_builder.h"

#include <cmath>

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

// The optional "in" key: must equal the inferred size; written back either way.
void check_in(JsonReader& f, int64_t inferred) {
  if (f.has("in")) {
    int64_t given = f.require_positive_int("in");
    GANTRY_CHECK(given == inferred, f.key_path("in"), ": expected ", inferred,
                 " (inferred from the input shape), found ", given);
  } else {
    f.get_positive_int("in", inferred);
  }
}

int checked_int(JsonReader& f, const std::string& key, int64_t value) {
  if (value > (1 << 20)) f.fail(key, "an integer <= 1048576");
  return static_cast<int>(value);
}

ModulePtr maybe_spectral(JsonReader& f, ModulePtr m, RngKey key) {
  if (f.get_bool("spectral_norm", false)) return spectral_norm(std::move(m), "weight", {}, key);
  return m;
}

ModulePtr build_conv(JsonReader& f, const std::string& type, Dims& shape, RngKey key) {
  bool transposed = type == "conv_transpose2d";
  if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
  check_in(f, shape[0]);
  int64_t out = f.require_positive_int("out");
  ConvOptions o;
  int k = checked_int(f, "kernel", f.require_positive_int("kernel"));
  o.stride = checked_int(f, "stride", f.get_positive_int("stride", 1));
  o.padding = checked_int(f, "padding", f.get_non_negative_int("padding", 0));
  o.dilation = checked_int(f, "dilation", f.get_positive_int("dilation", 1));
  if (transposed) {
    o.output_padding = checked_int(f, "output_padding", f.get_non_negative_int("output_padding", 0));
    if (o.output_padding >= std::max(o.stride, o.dilation))
      f.fail("output_padding", "an integer smaller than max(stride, dilation) = " +
                                   std::to_string(std::max(o.stride, o.dilation)));
  }
  o.bias = f.get_bool("bias", true);
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
    int64_t out = f.require_positive_int("out");
    bool bias = f.get_bool("bias", true);
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
    o.eps = f.get_number_in("eps", 1e-5, 0.0, HUGE_VAL);
    if (o.eps <= 0) f.fail("eps", "a number > 0");
    o.momentum = f.get_number_in("momentum", 0.1, 0.0, 1.0);
    o.affine = f.get_bool("affine", true);
    o.track_running_stats = f.get_bool("track_running_stats", true);
    if (two_d) return std::make_shared<BatchNorm2d>(shape[0], o);
    return std::make_shared<BatchNorm1d>(shape[0], o);
  }
  if (type == "layer_norm") {
    double eps = f.get_number_in("eps", 1e-5, 0.0, HUGE_VAL);
    if (eps <= 0) f.fail("eps", "a number > 0");
    return std::make_shared<LayerNorm>(shape, eps, f.get_bool("affine", true));
  }
  if (type == "instance_norm2d") {
    if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
    check_in(f, shape[0]);
    double eps = f.get_number_in("eps", 1e-5, 0.0, HUGE_VAL);
    if (eps <= 0) f.fail("eps", "a number > 0");
    return std::make_shared<InstanceNorm2d>(shape[0], eps, f.get_bool("affine", false));
  }
  if (type == "embedding") {
    if (shape.size() != 1) shape_error(f, type, "(L,) of indices", shape);
    int64_t num = f.require_positive_int("num"), dim = f.require_positive_int("dim");
    shape = {shape[0], dim};
    return std::make_shared<Embedding>(num, dim, key);
  }
  if (type == "dropout") return std::make_shared<Dropout>(f.get_number_in("p", 0.5, 0.0, 1.0, false));
  if (type == "relu") return std::make_shared<ReLU>();
  if (type == "tanh") return std::make_shared<Tanh>();
  if (type == "sigmoid") return std::make_shared<Sigmoid>();
  if (type == "leaky_relu") return std::make_shared<LeakyReLU>(f.get_number_in("slope", 0.01, 0.0, HUGE_VAL));
  if (type == "flatten") {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    shape = {n};
    return std::make_shared<Flatten>();
  }
  if (type == "reshape") {
    Dims sizes = f.require_int_list("shape");
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
                 f.value("shape", nullptr).dump());
    shape = sizes;
    return std::make_shared<Reshape>(sizes);
  }
  if (type == "upsample") {
    int64_t scale = f.get_positive_int("scale", 2);
    std::string mode = f.get_string("mode", "nearest");
    if (mode != "nearest") f.fail("mode", "\"nearest\"");
    if (shape.size() != 3) shape_error(f, type, "(C, H, W)", shape);
    int s = checked_int(f, "scale", scale);
    shape = {shape[0], shape[1] * s, shape[2] * s};
    return std::make_shared<Upsample>(s);
  }
  GANTRY_FAIL(f.key_path("type"), ": unknown layer type \"", type, "\" (known: linear, conv2d, "
              "conv_transpose2d, batch_norm1d, batch_norm2d, layer_norm, instance_norm2d, "
              "embedding, dropout, relu, leaky_relu, tanh, sigmoid, flatten, reshape, upsample)");
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
    std::string type = f.require_string("type");
    ModulePtr m = build_layer(f, type, shape, init::key_for(key, std::to_string(i)));
    f.finish();
    out.net->push_back(std::move(m));
    out.resolved.push_back(std::move(layer));
  }
  out.output_shape = shape;
  return out;
}

}  // namespace gantry::nn
