// Image transforms on one example's image (C, H, W), u8 or f32. The tensor functions are pure;
// the Transform factories in `transforms::` wrap them for Pipeline::map().
//
// Note [random transforms]: a random decision for an example is element `example.index` of
// the Philox stream RngKey{seed, stream_id(purpose, example.epoch)}, so it depends only on
// (seed, epoch, dataset index): not on worker threads, shuffle order or shard.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "data/example.h"

namespace gantry::data {

enum class Interpolation { Nearest, Linear, Area, Cubic };

// Resized to (C, height, width) with OpenCV; same dtype (u8 is rounded and saturated).
Tensor resize(const Tensor& image, int64_t height, int64_t width,
              Interpolation interpolation = Interpolation::Linear);
// The centred (C, height, width) window; the size must fit in the image. An odd difference
// puts the extra pixel at the bottom/right, as torchvision.
Tensor center_crop(const Tensor& image, int64_t height, int64_t width);
// Constant padding; `value` must fit the dtype (0..255 integers for u8).
Tensor pad(const Tensor& image, int64_t top, int64_t bottom, int64_t left, int64_t right,
           float value = 0.0f);
Tensor flip_horizontal(const Tensor& image);
// u8 [0, 255] (or f32 holding such values) -> f32 [-1, 1]: x / 127.5 - 1.
Tensor scale_to_signed_unit(const Tensor& image);
// Between 1 (gray), 3 (RGB) and 4 (RGBA) channels, as StyleGAN and OpenCV do: gray is
// replicated; RGB -> gray uses ITU-R 601 luma 0.299 R + 0.587 G + 0.114 B (rounded for u8);
// RGBA -> RGB or gray drops alpha first; 1 or 3 -> 4 adds an opaque alpha (255 for u8, 255.0
// for f32, which holds [0, 255] values here). Same count: a copy.
Tensor convert_channels(const Tensor& image, int64_t channels);

enum class SquareMode {
  CenterCrop,  // the centred square of side min(H, W)
  Pad,         // zero-padded, centred, to side max(H, W)
};
// A square image from a non-square one (a square one is copied): for StyleGAN-style datasets of
// one fixed resolution, followed by resize().
Tensor to_square(const Tensor& image, SquareMode mode);

// Purpose ids for Note [random transforms].
constexpr uint64_t kRandomFlipPurpose = 0x666c69702d68ULL;  // "flip-h"

// Whether random_horizontal_flip flips example `index` in `epoch`: u <= p for the uniform u in
// (0, 1] of Note [random transforms].
bool random_flip_decision(uint64_t seed, int64_t epoch, int64_t index, float p = 0.5f);

using Transform = std::function<Example(Example)>;

namespace transforms {
Transform resize(int64_t height, int64_t width,
                 Interpolation interpolation = Interpolation::Linear);
Transform center_crop(int64_t height, int64_t width);
Transform pad(int64_t top, int64_t bottom, int64_t left, int64_t right, float value = 0.0f);
Transform pad(int64_t amount, float value = 0.0f);  // the same on every side
Transform random_horizontal_flip(uint64_t seed, float p = 0.5f);
Transform scale_to_signed_unit();
Transform convert_channels(int64_t channels);
Transform to_square(SquareMode mode);
// Applies `steps` in order.
Transform compose(std::vector<Transform> steps);
}  // namespace transforms

}  // namespace gantry::data
