// Parameter initialisers. Each writes in place (keeping handles valid) and draws from a Philox
// stream, so the same key gives the same weights on every device; the numbers are not those
// of torch's generator, only the distributions are.
#pragma once

#include <string>
#include <vector>

#include "base/philox.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace gantry::nn::init {

// PyTorch's torch.nn.init._calculate_fan_in_and_fan_out: dim 1 × receptive field is fan_in,
// dim 0 × receptive field is fan_out (so a ConvTranspose2d weight [in, out, kh, kw] has
// fan_in = out × kh × kw, as in PyTorch).
struct Fans {
  int64_t fan_in;
  int64_t fan_out;
};
Fans fans(const Tensor& t);

// The gain of torch.nn.init.calculate_gain ("linear", "conv2d", "sigmoid", "tanh", "relu",
// "leaky_relu" with `param` as the slope).
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

void constant_(const Tensor& t, double value);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);
void uniform_(const Tensor& t, double lo, double hi, RngKey key);
void normal_(const Tensor& t, double mean, double std, RngKey key);
// mode "fan_in" or "fan_out"; `a` is the leaky_relu slope when nonlinearity is "leaky_relu".
void kaiming_uniform_(const Tensor& t, double a, RngKey key, const std::string& mode = "fan_in",
                      const std::string& nonlinearity = "leaky_relu");
void kaiming_normal_(const Tensor& t, double a, RngKey key, const std::string& mode = "fan_in",
                     const std::string& nonlinearity = "leaky_relu");
void xavier_uniform_(const Tensor& t, double gain, RngKey key);
void xavier_normal_(const Tensor& t, double gain, RngKey key);
// Q of a QR decomposition of a normal matrix (rows = dim 0, columns = the rest), signs fixed
// so R has a positive diagonal, as torch.nn.init.orthogonal_.
void orthogonal_(const Tensor& t, double gain, RngKey key);

// PyTorch's default for Linear/Conv weights: kaiming_uniform(a = sqrt(5)) = U(±1/sqrt(fan_in)),
// and the bias U(±1/sqrt(fan_in)) with the weight's fan_in.
void default_weight_(const Tensor& weight, RngKey key);
void default_bias_(const Tensor& bias, const Tensor& weight, RngKey key);

// The key for the tensor at dotted path `name`: different names get independent streams.
RngKey key_for(RngKey key, const std::string& name);

// Initialises every module of the tree by scheme name:
//   "default"        PyTorch's reset_parameters of each layer
//   "dcgan"          conv/linear weights N(0, 0.02), biases 0; batch norm weight N(1, 0.02),
//                    bias 0 (Radford et al.)
//   "normal"         conv/linear weights N(0, gain), biases 0 (gain defaults to 0.02)
//   "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal"
//                    conv/linear weights, biases 0; norm layers keep their defaults
// `gain` scales the weight scheme (ignored by "default" and "dcgan"; 0 means the scheme's
// default). Unknown names throw, listing the known ones.
void apply(Module& module, const std::string& scheme, RngKey key, double gain = 0.0);
const std::vector<std::string>& scheme_names();

}  // namespace gantry::nn::init
