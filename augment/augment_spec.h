// What to augment and how strongly: the transforms of a DiffAugment-style policy, each applied
// per example with probability p, and the ADA controller that adapts p (docs/augmentation.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantry::augment {

// DiffAugment's policies (Zhao et al. 2020). "color" is brightness, saturation and contrast, each
// gated on its own; they run in DiffAugment's order: color, translation, cutout.
struct AugmentPolicy {
  bool brightness = false;
  bool saturation = false;
  bool contrast = false;
  bool translation = false;
  bool cutout = false;
  double translation_ratio = 0.125;  // shifts up to round(ratio * size) pixels each way
  double cutout_ratio = 0.5;         // the erased square is round(ratio * size) on a side

  bool any() const { return brightness || saturation || contrast || translation || cutout; }
  // The policy's transforms by name, as the config writes them back.
  std::vector<std::string> names() const;
};

// ADA's rule (Karras et al. 2020): every `interval` discriminator updates,
// p += sign(E[sign(D(real))] - target) * (batch * interval) / (speed_kimg * 1000), in [0, 1].
struct AdaptiveSettings {
  bool enabled = false;
  double target = 0.6;
  int64_t interval = 4;       // discriminator updates between adjustments
  double speed_kimg = 500.0;  // images for p to move by 1
};

struct AugmentSpec {
  AugmentPolicy policy;
  double initial_p = 0.0;  // the fixed p, or where the adaptive p starts
  AdaptiveSettings adaptive;

  bool enabled() const { return policy.any(); }
};

}  // namespace gantry::augment
