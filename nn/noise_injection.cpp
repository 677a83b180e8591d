#include "nn/noise_injection.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

NoiseMode parse_noise_mode(const std::string& name, const std::string& where) {
  if (name == "random") return NoiseMode::Random;
  if (name == "const") return NoiseMode::Const;
  if (name == "none") return NoiseMode::None;
  GANTRY_FAIL(where, ": expected noise mode \"random\", \"const\" or \"none\", found \"", name, "\"");
}

const char* noise_mode_name(NoiseMode mode) {
  switch (mode) {
    case NoiseMode::Random: return "random";
    case NoiseMode::Const: return "const";
    case NoiseMode::None: return "none";
  }
  return "?";
}

NoiseInjection::NoiseInjection(int64_t const_resolution, RngKey key) : Cloneable("NoiseInjection") {
  GANTRY_CHECK(const_resolution >= 0, "NoiseInjection: expected const_resolution 0 (none) or positive, found ",
               const_resolution);
  register_parameter("noise_strength", ops::zeros(Shape{}));
  if (const_resolution > 0) {
    register_buffer("noise_const", ops::empty({const_resolution, const_resolution}));
    init::normal_(get("noise_const"), 0.0, 1.0, init::key_for(key, "noise_const"));
  }
}

void NoiseInjection::reset_parameters(RngKey) { init::zeros_(get("noise_strength")); }

void NoiseInjection::set_mode(NoiseMode mode) {
  GANTRY_CHECK(mode != NoiseMode::Const || has("noise_const"),
               "NoiseInjection: noise mode \"const\" needs the constant noise maps (noise_const), which this "
               "layer does not keep");
  mode_ = mode;
}

std::string NoiseInjection::extra_repr() const {
  return has("noise_const") ? "noise_const=" + get("noise_const").shape().str() : std::string();
}

Tensor NoiseInjection::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4, "NoiseInjection: expected input (N, C, H, W), found ", x.shape().str());
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  if (mode_ == NoiseMode::None) return x;
  if (mode_ == NoiseMode::Const) {
    const Tensor& maps = get("noise_const");
    GANTRY_CHECK(maps.size(0) == h && maps.size(1) == w, "NoiseInjection: constant noise maps ", maps.shape().str(),
                 " do not fit input ", x.shape().str());
    return ops::add(x, ops::mul(ops::reshape(maps, {1, 1, h, w}), get("noise_strength")));
  }
  const uint64_t offset = rng_first_example() * static_cast<uint64_t>(h * w);
  Tensor noise = ops::randn({n, 1, h, w}, rng_key(), offset, x.device());
  return ops::add(x, ops::mul(noise, get("noise_strength")));
}

}  // namespace gantry::nn
