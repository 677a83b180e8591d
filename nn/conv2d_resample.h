// StyleGAN2's conv2d_resample: a convolution fused with FIR up- or down-sampling by 2 (or any
// factor), arranged as StyleGAN2 arranges it so the results (and so trained weights) match:
//   up:   conv_transpose2d(x, w^T, stride up) then upfirdn2d(f, gain up^2), which crops the
//         transposed convolution's extra border and blurs away the checkerboard it leaves;
//   down: upfirdn2d(f) blur with the pads the strided convolution needs, then conv2d stride down
//         (for a 1x1 kernel: downsample first, then convolve);
//   none: conv2d with padding.
// Everything is made of differentiable ops whose backward is again differentiable, so R1 and
// path-length regularisation can differentiate through it twice.
#pragma once

#include "core/tensor.h"

namespace gantry::nn {

// x (N, I, H, W), w (O, I, k, k), f (fh, fw) the FIR filter (may be undefined when up = down = 1),
// padding as conv2d's (k / 2 keeps the size) -> (N, O, H * up / down, W * up / down).
// up and down cannot both exceed 1.
Tensor conv2d_resample(const Tensor& x, const Tensor& w, const Tensor& f, int up, int down, int padding);

}  // namespace gantry::nn
