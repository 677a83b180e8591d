// StyleGAN2's bias_act for the layers with equalised learning rate: add a per-channel bias
// (scaled by the layer's lr multiplier), then the activation with its gain. Leaky ReLU uses
// slope 0.2 and gain sqrt(2), so activations keep unit variance at initialisation. A positive
// clamp then limits the result to [-clamp, clamp]: StyleGAN2-ADA's conv_clamp, which its
// training configs set to 256 (against float16 overflow) and which its networks apply in float32
// too, so converted networks need it to compute the same function.
#pragma once

#include <string>

#include "core/tensor.h"

namespace gantry::nn {

enum class BiasActivation : uint8_t { Linear, LeakyRelu };

// "linear" or "lrelu"; anything else throws naming the known names and `where` (a config path
// or layer name).
BiasActivation parse_bias_activation(const std::string& name, const std::string& where);
const char* bias_activation_name(BiasActivation a);

// x (N, C, ...) + bias (C) * bias_gain (bias may be undefined), then the activation, then
// clamped to [-clamp, clamp] when clamp > 0.
Tensor bias_act(const Tensor& x, const Tensor& bias, float bias_gain, BiasActivation act, float clamp = 0.0f);

}  // namespace gantry::nn
