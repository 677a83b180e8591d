#include "gan/step/multi_level.h"

#include <algorithm>
#include <cmath>

#include "core/ops/ops.h"

namespace gantry::gan {

Tensor stacked_levels(const Tensor& images, int64_t levels, int64_t channels) {
  const int64_t found = images.size(1);
  if (found == levels * channels) return images;
  GANTRY_CHECK(found == channels, "multi-level supervision: expected images of ", channels, " channels (one level) or ",
               levels * channels, " (", levels, " levels), found ", images.shape().str());
  return ops::concat(std::vector<Tensor>(static_cast<size_t>(levels), images), 1);
}

Tensor augmented_levels(const Tensor& stack, int64_t levels, int64_t channels, const augment::AugmentSpec& spec,
                        double p, RngKey key, uint64_t first_example) {
  if (levels == 1) return augment::augment(stack, spec, p, key, first_example);
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < levels; ++k)
    parts.push_back(augment::augment(ops::slice(stack, 1, k * channels, (k + 1) * channels), spec, p, key, first_example));
  return ops::concat(parts, 1);
}

namespace {

// Note [multi-level supervision]'s nested noise, added to the stacked levels.
Tensor noised_levels(const Tensor& stack, const std::vector<float>& t, int64_t channels, RngKey key,
                     uint64_t first_example) {
  const auto levels = static_cast<int64_t>(t.size());
  const Shape& shape = stack.shape();
  const int64_t per_example = shape.numel() / std::max<int64_t>(shape[0], 1);
  const Tensor e = ops::randn(shape, key, first_example * static_cast<uint64_t>(per_example), stack.device());
  auto level = [channels](const Tensor& x, int64_t k) { return ops::slice(x, 1, k * channels, (k + 1) * channels); };
  std::vector<Tensor> seen(static_cast<size_t>(levels));
  Tensor noise = ops::mul(level(e, levels - 1), t.back());
  for (int64_t k = levels - 1; k >= 0; --k) {
    const double tk = t[static_cast<size_t>(k)];
    if (k < levels - 1) {
      const double next = t[static_cast<size_t>(k + 1)], r = (1.0 - tk) / (1.0 - next);
      const double fresh = std::sqrt(std::max(0.0, tk * tk - r * next * r * next));
      noise = ops::add(ops::mul(noise, static_cast<float>(r)), ops::mul(level(e, k), static_cast<float>(fresh)));
    }
    seen[static_cast<size_t>(k)] = ops::add(ops::mul(level(stack, k), static_cast<float>(1.0 - tk)), noise);
  }
  return ops::concat(seen, 1);
}

}  // namespace

Tensor discriminator_levels(const Tensor& images, const std::vector<float>& level_noise, int64_t channels,
                            const augment::AugmentSpec& augment, double p, RngKey augment_key, RngKey noise_key,
                            uint64_t first_example) {
  if (level_noise.empty()) return augment::augment(images, augment, p, augment_key, first_example);
  const auto levels = static_cast<int64_t>(level_noise.size());
  // One level: augmented once, then repeated (the same as augmenting each copy alike).
  Tensor stack = images.size(1) == channels
                     ? stacked_levels(augment::augment(images, augment, p, augment_key, first_example), levels, channels)
                     : augmented_levels(stacked_levels(images, levels, channels), levels, channels, augment, p,
                                        augment_key, first_example);
  return noised_levels(stack, level_noise, channels, noise_key, first_example);
}

}  // namespace gantry::gan
