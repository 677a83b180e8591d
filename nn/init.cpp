#include "nn/init.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry::nn::init {

namespace {

// Host values -> the tensor's storage (any device), no history.
void write(const Tensor& t, const std::vector<float>& values) {
  NoGradGuard no_grad;
  ops::copy_(t, ops::from_vector(values, t.shape()));
}

std::vector<float> uniform_values(int64_t n, double lo, double hi, RngKey key) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(lo + (hi - lo) * static_cast<double>(philox_uniform(key, i)));
  return v;
}

std::vector<float> normal_values(int64_t n, double mean, double std, RngKey key) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(mean + std * static_cast<double>(philox_normal(key, i)));
  return v;
}

double kaiming_std(const Tensor& t, double a, const std::string& mode,
                   const std::string& nonlinearity) {
  Fans f = fans(t);
  int64_t fan = 0;
  if (mode == "fan_in") fan = f.fan_in;
  else if (mode == "fan_out") fan = f.fan_out;
  else GANTRY_FAIL("kaiming init: expected mode 'fan_in' or 'fan_out', found '", mode, "'");
  GANTRY_CHECK(fan > 0, "kaiming init: zero fan for a tensor of shape ", t.shape().str());
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}

bool is_weighted_layer(const std::string& type) {
  return type == "Linear" || type == "Conv2d" || type == "ConvTranspose2d";
}

bool is_norm_layer(const std::string& type) {
  return type == "BatchNorm1d" || type == "BatchNorm2d" || type == "LayerNorm" ||
         type == "InstanceNorm2d";
}

// The trainable weight of a layer: weight_orig under spectral normalisation.
const char* weight_name(const Module& m) { return m.has("weight_orig") ? "weight_orig" : "weight"; }

}  // namespace

Fans fans(const Tensor& t) {
  GANTRY_CHECK(t.dim() >= 2, "init: fan in and fan out need at least 2 dimensions, found shape ",
               t.shape().str());
  int64_t receptive = 1;
  for (int d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv2d" || nonlinearity == "conv_transpose2d" ||
      nonlinearity == "sigmoid")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  GANTRY_FAIL("init: unknown nonlinearity '", nonlinearity, "' (expected linear, conv2d, sigmoid, "
              "tanh, relu or leaky_relu)");
}

void constant_(const Tensor& t, double value) {
  write(t, std::vector<float>(static_cast<size_t>(t.numel()), static_cast<float>(value)));
}
void zeros_(const Tensor& t) { constant_(t, 0.0); }
void ones_(const Tensor& t) { constant_(t, 1.0); }

void uniform_(const Tensor& t, double lo, double hi, RngKey key) {
  write(t, uniform_values(t.numel(), lo, hi, key));
}

void normal_(const Tensor& t, double mean, double std, RngKey key) {
  write(t, normal_values(t.numel(), mean, std, key));
}

void kaiming_uniform_(const Tensor& t, double a, RngKey key, const std::string& mode,
                      const std::string& nonlinearity) {
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  uniform_(t, -bound, bound, key);
}

void kaiming_normal_(const Tensor& t, double a, RngKey key, const std::string& mode,
                     const std::string& nonlinearity) {
  normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), key);
}

void xavier_uniform_(const Tensor& t, double gain, RngKey key) {
  Fans f = fans(t);
  double std = gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out));
  double bound = std::sqrt(3.0) * std;
  uniform_(t, -bound, bound, key);
}

void xavier_normal_(const Tensor& t, double gain, RngKey key) {
  Fans f = fans(t);
  normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out)), key);
}

void orthogonal_(const Tensor& t, double gain, RngKey key) {
  GANTRY_CHECK(t.dim() >= 2, "orthogonal init: expected at least 2 dimensions, found shape ",
               t.shape().str());
  const int64_t rows = t.size(0), cols = t.numel() / std::max<int64_t>(rows, 1);
  // Work on the tall orientation m x n (m >= n): QR by modified Gram-Schmidt on the columns,
  // which gives R a positive diagonal, i.e. torch's Q * sign(diag(R)).
  const bool transpose = rows < cols;
  const int64_t m = transpose ? cols : rows, n = transpose ? rows : cols;
  std::vector<float> flat = normal_values(rows * cols, 0.0, 1.0, key);
  std::vector<double> a(static_cast<size_t>(m * n));  // column-major m x n
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t i = transpose ? c : r, j = transpose ? r : c;
      a[j * m + i] = flat[r * cols + c];
    }
  for (int64_t j = 0; j < n; ++j) {
    double* qj = &a[j * m];
    for (int64_t k = 0; k < j; ++k) {
      const double* qk = &a[k * m];
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += qk[i] * qj[i];
      for (int64_t i = 0; i < m; ++i) qj[i] -= dot * qk[i];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += qj[i] * qj[i];
    norm = std::sqrt(norm);
    GANTRY_CHECK(norm > 0, "orthogonal init: degenerate random matrix");
    for (int64_t i = 0; i < m; ++i) qj[i] /= norm;
  }
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t i = transpose ? c : r, j = transpose ? r : c;
      out[r * cols + c] = static_cast<float>(gain * a[j * m + i]);
    }
  write(t, out);
}

void default_weight_(const Tensor& weight, RngKey key) {
  kaiming_uniform_(weight, std::sqrt(5.0), key);
}

void default_bias_(const Tensor& bias, const Tensor& weight, RngKey key) {
  int64_t fan_in = fans(weight).fan_in;
  double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  uniform_(bias, -bound, bound, key);
}

RngKey key_for(RngKey key, const std::string& name) {
  return RngKey{key.seed, stream_id(key.stream, name_hash(name))};
}

const std::vector<std::string>& scheme_names() {
  static const std::vector<std::string> names{"default",        "dcgan",         "normal",
                                              "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                              "kaiming_normal", "orthogonal"};
  return names;
}

void apply(Module& module, const std::string& scheme, RngKey key, double gain) {
  bool known = false;
  for (const std::string& n : scheme_names()) known = known || n == scheme;
  if (!known) {
    std::string list;
    for (const std::string& n : scheme_names()) list += (list.empty() ? "" : ", ") + n;
    GANTRY_FAIL("init: unknown scheme '", scheme, "' (known: ", list, ")");
  }
  for (auto& [path, m] : module.named_modules()) {
    RngKey k = key_for(key, path);
    m->reset_parameters(k);
    if (scheme == "default") continue;
    const std::string& type = m->type_name();
    RngKey wk = key_for(k, "weight.init");
    if (is_weighted_layer(type)) {
      const Tensor& w = m->get(weight_name(*m));
      if (scheme == "dcgan") normal_(w, 0.0, 0.02, wk);
      else if (scheme == "normal") normal_(w, 0.0, gain > 0 ? gain : 0.02, wk);
      else if (scheme == "xavier_uniform") xavier_uniform_(w, gain > 0 ? gain : 1.0, wk);
      else if (scheme == "xavier_normal") xavier_normal_(w, gain > 0 ? gain : 1.0, wk);
      else if (scheme == "kaiming_uniform") kaiming_uniform_(w, gain > 0 ? gain : 0.0, wk);
      else if (scheme == "kaiming_normal") kaiming_normal_(w, gain > 0 ? gain : 0.0, wk);
      else if (scheme == "orthogonal") orthogonal_(w, gain > 0 ? gain : 1.0, wk);
      if (m->has("bias") && m->get("bias").defined()) zeros_(m->get("bias"));
    } else if (scheme == "dcgan" && is_norm_layer(type) && m->has("weight")) {
      normal_(m->get("weight"), 1.0, 0.02, wk);
      zeros_(m->get("bias"));
    }
  }
}

}  // namespace gantry::nn::init
