// StyleGAN2's per-layer noise input: x + noise_strength * n with n of shape (N, 1, H, W), one map
// per example shared by the channels, and noise_strength a learned scalar (initially 0). Where
// n comes from is StyleGAN2-ADA's noise_mode:
//   random  n ~ N(0, 1) from the module's Philox stream (Note [module randomness]) starting at
//           element first_example * H * W, so example i gets the same noise on whichever replica
//           runs it and a resumed run redraws exactly what the interrupted one would have; what
//           training uses, and the default in eval mode as well;
//   const   the buffer noise_const (H, W) for every example: StyleGAN2's fixed maps, drawn
//           N(0, 1) once at construction (only when the module keeps them: const_resolution > 0);
//   none    no noise.
#pragma once

#include <string>

#include "nn/module.h"

namespace gantry::nn {

enum class NoiseMode : uint8_t { Random, Const, None };

// "random", "const" or "none"; anything else throws naming the known names and `where`.
NoiseMode parse_noise_mode(const std::string& name, const std::string& where);
const char* noise_mode_name(NoiseMode mode);

class NoiseInjection : public Cloneable<NoiseInjection> {
 public:
  // const_resolution > 0 also keeps the buffer noise_const (const_resolution, const_resolution),
  // drawn from `key`.
  explicit NoiseInjection(int64_t const_resolution = 0, RngKey key = {});
  void reset_parameters(RngKey key) override;
  // Const needs the noise_const buffer (an error otherwise).
  void set_mode(NoiseMode mode);
  NoiseMode mode() const { return mode_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W) -> same

 private:
  NoiseMode mode_ = NoiseMode::Random;
};

}  // namespace gantry::nn
