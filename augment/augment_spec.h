// What to augment and how strongly: the transforms of a DiffAugment-style policy, each applied
// per example with probability p, and the ADA controller that adapts p (docs/augmentation.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/value_schedule.h"

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

// ADA's augmentation pipeline (Karras et al. 2020, StyleGAN2-ADA's augment.py): each transform
// has a probability multiplier (0 = off, 1 = on with probability p) and ADA's strengths. The
// presets turn on groups (augment/ada_pipeline.h, docs/augmentation.md).
struct AdaPipeline {
  std::string preset;  // as the config named it ("bgc", ...)
  // pixel blitting
  double xflip = 0, rotate90 = 0, xint = 0;
  double xint_max = 0.125;  // integer translation up to this fraction of the size
  // general geometric
  double scale = 0, rotate = 0, aniso = 0, xfrac = 0;
  double scale_std = 0.2;   // log2 standard deviation of the isotropic scale
  double rotate_max = 1.0;  // rotation up to this fraction of a half turn
  double aniso_std = 0.2;   // log2 standard deviation of the anisotropic scale
  double xfrac_std = 0.125; // fractional translation's standard deviation, fraction of the size
  // colour
  double brightness = 0, contrast = 0, lumaflip = 0, hue = 0, saturation = 0;
  double brightness_std = 0.2;
  double contrast_std = 0.5;    // log2
  double hue_max = 1.0;         // fraction of a half turn
  double saturation_std = 1.0;  // log2

  bool geometric() const { return xflip > 0 || rotate90 > 0 || xint > 0 || scale > 0 || rotate > 0 || aniso > 0 || xfrac > 0; }
  bool color() const { return brightness > 0 || contrast > 0 || lumaflip > 0 || hue > 0 || saturation > 0; }
  bool any() const { return geometric() || color(); }
};

// The ADA presets Gantry builds: "blit", "geom", "color", "bg", "bgc". Throws for others, the
// message starting with `where` (ADA's "filter", "noise", "cutout" and the presets using them
// are not built).
AdaPipeline ada_preset(const std::string& name, const std::string& where = "ADA preset");

enum class AugmentPipeline { kDiffAugment, kAda };

// ADA's rule (Karras et al. 2020): every `interval` discriminator updates,
// p += sign(E[sign(D(real))] - target) * (batch * interval) / (speed_kimg * 1000), in [0, 1].
struct AdaptiveSettings {
  bool enabled = false;
  double target = 0.6;
  int64_t interval = 4;       // discriminator updates between adjustments
  double speed_kimg = 500.0;  // images for p to move by 1
};

struct AugmentSpec {
  AugmentPipeline pipeline = AugmentPipeline::kDiffAugment;
  AugmentPolicy policy;  // the DiffAugment pipeline's transforms
  AdaPipeline ada;       // the ADA pipeline's
  double initial_p = 0.0;  // the fixed p, or where the adaptive p starts
  // p over the images seen instead of a fixed one (Note [value schedules]); never adaptive.
  std::optional<nn::ValueSchedule> scheduled_p;
  AdaptiveSettings adaptive;

  bool enabled() const { return pipeline == AugmentPipeline::kAda ? ada.any() : policy.any(); }
};

}  // namespace gantry::augment
