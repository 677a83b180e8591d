// Brings images to a feature network's input: 1 channel is repeated to 3 (as pytorch-fid does
// for grayscale), 3 channels become 1 by averaging, and another height/width is resized
// bilinearly as torch.nn.functional.interpolate(align_corners=False) does (ops::resize_bilinear,
// on the images' device). The resize is part of a result's settings, as
// clean-fid showed that resize choices move FID.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace gantry::metrics {

// images (N, C, H, W) f32 -> (N, shape[0], shape[1], shape[2]) on the same device; returned as
// is when it already fits.
Tensor adapt_images(const Tensor& images, const std::vector<int64_t>& shape);

// How adapt_images resizes, recorded with every result (and in the statistics cache key).
inline constexpr const char* kAdaptResize =
    "bilinear, align_corners=False (torch.nn.functional.interpolate) when the image size differs";

}  // namespace gantry::metrics
