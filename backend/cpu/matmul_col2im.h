// Backward data of a convolution with few input channels as matmul + col2im (Note [few-channel
// backward data] in matmul_col2im.cpp).
#pragma once

#include "backend/backend.h"

namespace gantry::cpu {

// Whether gx (N, I, H, W) has few enough channels for matmul_col2im_backward_data to win.
bool few_channel_backward_data(const Shape& gx, const Shape& w);
// gx = conv2d backward data of gy (plain NCHW) through w (O, I, kh, kw); f32, groups 1.
void matmul_col2im_backward_data(const View& gy, const View& w, const ConvParams& p,
                                 const View& gx);

}  // namespace gantry::cpu
