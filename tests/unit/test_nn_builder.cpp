// The JSON Sequential builder: shape inference, defaults written back, errors with JSON paths.
#include <gtest/gtest.h>

#include "core/ops/ops.h"
#include "nn/sequential_builder.h"

namespace gantry::nn {
namespace {

using nlohmann::json;

std::string build_error(const json& layers, std::vector<int64_t> input) {
  try {
    build_sequential(layers, input, "generator.layers");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NnBuilder, InfersShapesAndWritesDefaultsBack) {
  json layers = json::parse(R"([
    {"type": "conv2d", "out": 8, "kernel": 4, "stride": 2, "padding": 1, "bias": false},
    {"type": "leaky_relu", "slope": 0.2},
    {"type": "batch_norm2d"},
    {"type": "conv2d", "out": 16, "kernel": 3, "spectral_norm": true},
    {"type": "flatten"},
    {"type": "linear", "out": 1}
  ])");
  BuiltSequential b = build_sequential(layers, {3, 16, 16}, "discriminator.layers", RngKey{1, 0});
  EXPECT_EQ(b.output_shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(b.net->size(), 6u);
  EXPECT_EQ(b.net->child(0)->get("weight").shape(), Shape({8, 3, 4, 4}));
  EXPECT_EQ(b.net->child(2)->get("running_mean").shape(), Shape({8}));
  EXPECT_EQ(b.net->child(3)->get("weight_orig").shape(), Shape({16, 8, 3, 3}));
  EXPECT_EQ(b.net->child(5)->get("weight").shape(), Shape({1, 16 * 6 * 6}));
  EXPECT_EQ(b.net->forward(ops::randn({2, 3, 16, 16}, RngKey{2, 0})).shape(), Shape({2, 1}));

  EXPECT_EQ(b.resolved[0], json::parse(R"({"type": "conv2d", "in": 3, "out": 8, "kernel": 4,
      "stride": 2, "padding": 1, "dilation": 1, "bias": false, "spectral_norm": false})"));
  EXPECT_EQ(b.resolved[2], json::parse(R"({"type": "batch_norm2d", "in": 8, "eps": 1e-5,
      "momentum": 0.1, "affine": true, "track_running_stats": true})"));
  EXPECT_EQ(b.resolved[5], json::parse(R"({"type": "linear", "in": 576, "out": 1, "bias": true,
      "spectral_norm": false})"));
  // The resolved list builds the same network, with the same initial weights.
  BuiltSequential again = build_sequential(b.resolved, {3, 16, 16}, "x", RngKey{1, 0});
  EXPECT_EQ(again.resolved, b.resolved);
  EXPECT_EQ(again.net->child(5)->get("weight").to_vector(), b.net->child(5)->get("weight").to_vector());
}

TEST(NnBuilder, GeneratorShapes) {
  json layers = json::parse(R"([
    {"type": "linear", "out": 128},
    {"type": "reshape", "shape": [32, 2, 2]},
    {"type": "conv_transpose2d", "out": 16, "kernel": 4, "stride": 2, "padding": 1},
    {"type": "relu"},
    {"type": "upsample"},
    {"type": "conv2d", "out": 3, "kernel": 3, "padding": 1},
    {"type": "instance_norm2d"},
    {"type": "dropout", "p": 0.1},
    {"type": "tanh"}
  ])");
  BuiltSequential b = build_sequential(layers, {10});
  EXPECT_EQ(b.output_shape, (std::vector<int64_t>{3, 8, 8}));
  EXPECT_EQ(b.net->forward(ops::randn({2, 10}, RngKey{3, 0})).shape(), Shape({2, 3, 8, 8}));
  EXPECT_EQ(b.resolved[4]["scale"], 2);
  EXPECT_EQ(b.resolved[4]["mode"], "nearest");
  EXPECT_EQ(b.resolved[2]["output_padding"], 0);
  EXPECT_EQ(b.resolved[6]["affine"], false);
}

// The transformer MLP's activations: silu and gelu (its tanh form written back), as the ops.
TEST(NnBuilder, SiluAndGeluLayersApplyTheirOps) {
  json layers = json::parse(R"([{"type": "silu"}, {"type": "gelu"}])");
  BuiltSequential b = build_sequential(layers, {5});
  EXPECT_EQ(b.output_shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(b.resolved[1], json::parse(R"({"type": "gelu", "approximate": "tanh"})"));
  EXPECT_EQ(b.net->child(1)->extra_repr(), "approximate='tanh'");
  Tensor x = ops::randn({3, 5}, RngKey{4, 0});
  EXPECT_EQ(b.net->forward(x).to_vector(), ops::gelu_tanh(ops::silu(x)).to_vector());
  EXPECT_EQ(build_error(json::parse(R"([{"type": "gelu", "approximate": "none"}])"), {5}),
            "generator.layers[0].approximate: expected \"tanh\", found \"none\"");
}

// rms_norm over the last dimension of (T, D) tokens, eps and affine written back.
TEST(NnBuilder, RmsNormLayerNormalisesTheLastDimension) {
  BuiltSequential b = build_sequential(json::parse(R"([{"type": "rms_norm"}])"), {3, 4});
  EXPECT_EQ(b.output_shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(b.resolved[0], json::parse(R"({"type": "rms_norm", "eps": 1e-6, "affine": true})"));
  EXPECT_EQ(b.net->child(0)->named_parameters().at(0).second.shape(), Shape({4}));
  Tensor x = ops::randn({2, 3, 4}, RngKey{5, 0});
  EXPECT_EQ(b.net->forward(x).to_vector(), ops::rms_norm(x, ops::ones({4}), 1e-6f).to_vector());
  BuiltSequential plain = build_sequential(json::parse(R"([{"type": "rms_norm", "eps": 0.01, "affine": false}])"), {4});
  EXPECT_TRUE(plain.net->named_parameters().empty());
  EXPECT_EQ(plain.net->forward(x).to_vector(), ops::rms_norm(x, {}, 0.01f).to_vector());
  EXPECT_EQ(build_error(json::parse(R"([{"type": "rms_norm"}])"), {3, 4, 4}),
            "generator.layers[0]: rms_norm expects an input of shape (D,) or (T, D), found (3, 4, 4) (the "
            "output of the previous layer)");
}

TEST(NnBuilder, ErrorsNameTheJsonPath) {
  json conv = json::parse(R"({"type": "conv2d", "out": 8, "kernel": 3})");
  json bad = conv;
  bad["kernel"] = "4";
  EXPECT_EQ(build_error(json::array({conv, conv, conv, bad}), {3, 32, 32}),
            "generator.layers[3].kernel: expected a positive integer, found \"4\"");
  bad = conv;
  bad["kernal"] = 3;
  EXPECT_EQ(build_error(json::array({bad}), {3, 8, 8}),
            "generator.layers[0].kernal: unknown key (accepted keys: bias, dilation, in, "
            "kernel, out, padding, spectral_norm, stride, type)");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "convolution"}])"), {3, 8, 8}),
            "generator.layers[0].type: unknown layer type \"convolution\" (known: linear, "
            "conv2d, conv_transpose2d, batch_norm1d, batch_norm2d, layer_norm, instance_norm2d, "
            "embedding, dropout, relu, leaky_relu, tanh, sigmoid, silu, gelu, flatten, reshape, upsample, "
            "rms_norm)");
  EXPECT_EQ(build_error(json::parse(R"([{"out": 3}])"), {3}),
            "generator.layers[0].type: expected a string, found nothing (the key is required)");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "linear"}])"), {3}),
            "generator.layers[0].out: expected a positive integer, found nothing (the key is "
            "required)");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "linear", "out": 2.5}])"), {3}),
            "generator.layers[0].out: expected a positive integer, found 2.5");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "linear", "out": 2, "bias": 1}])"), {3}),
            "generator.layers[0].bias: expected true or false, found 1");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "dropout", "p": 1.0}])"), {3}),
            "generator.layers[0].p: expected a number in [0, 1), found 1.0");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "linear", "out": 2}])"), {3, 4, 4}),
            "generator.layers[0]: linear expects an input of shape (F,) (add a flatten layer "
            "first), found (3, 4, 4) (the output of the previous layer)");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "conv2d", "out": 2, "kernel": 3, "in": 4}])"),
                        {3, 4, 4}),
            "generator.layers[0].in: expected 3 (inferred from the input shape), found 4");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "conv2d", "out": 2, "kernel": 5}])"), {3, 4, 4}),
            "generator.layers[0]: conv2d with kernel 5, stride 1, padding 0, dilation 1 gives an "
            "empty output for input (3, 4, 4) (output 0 x 0)");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "conv_transpose2d", "out": 2, "kernel": 4,
                                          "stride": 2, "output_padding": 2}])"), {3, 4, 4}),
            "generator.layers[0].output_padding: expected an integer smaller than max(stride, "
            "dilation) = 2, found 2");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "reshape", "shape": [5, -1]}])"), {12}),
            "generator.layers[0].shape: cannot reshape (12,) (12 elements) to [5,-1]");
  EXPECT_EQ(build_error(json::parse(R"([3])"), {3}),
            "generator.layers[0]: expected an object, found 3");
  EXPECT_EQ(build_error(json::parse(R"({"type": "relu"})"), {3}),
            "generator.layers: expected a non-empty list of layers, found {\"type\":\"relu\"}");
  EXPECT_EQ(build_error(json::parse(R"([{"type": "upsample", "mode": "bilinear"}])"), {3, 2, 2}),
            "generator.layers[0].mode: expected \"nearest\", found \"bilinear\"");
}

}  // namespace
}  // namespace gantry::nn
