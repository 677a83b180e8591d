// StyleGAN2's bias_act for the layers with equalised learning rate: add a per-channel bias
// (scaled by the layer's lr multiplier), then the activation with its gain. Leaky ReLU uses
// slope 0.2 and gain sqrt(2), so activations keep unit variance at initialisation.
#pragma once

#include <string>

#include "core/tensor.h"

namespace gantry::nn {

enum class BiasActivation : uint8_t { Linear, LeakyRelu };

// "linear" or "lrelu"; anything else throws naming the known names and `where` (a config path
// or layer name).
BiasActivation parse_bias_activation(const std::string& name, const std::string& where);
const char* bias_activation_name(BiasActivation a);

// x (N, C, ...) + bias (C) * bias_gain (bias may be undefined), then the activation.
Tensor bias_act(const Tensor& x, const Tensor& bias, float bias_gain, BiasActivation act);

}  // namespace gantry::nn
