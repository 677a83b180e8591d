// Naive, obviously-correct loops for the dense ops: the oracles the oneDNN (and CUDA) kernels
// are tested against. Never used on a hot path. All Views are contiguous f32 in host memory,
// with the same layouts and conventions as the Backend methods of the same name
// (backend/backend.h); sums accumulate in double.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace gantry::reference {

// Output size along one axis, PyTorch's floor mode (dilation 1 = dense).
int64_t conv_output_size(int64_t in, int64_t kernel, int stride, int padding, int dilation = 1);

// y (N, O, Ho, Wo) = conv(x (N, I, H, W), w (O, I / p.groups, kh, kw)) [+ bias (O)]
void conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                    const View& y);
// gx (N, I, H, W) = d(sum(gy * conv(x, w)))/dx
void conv2d_backward_data(const View& gy, const View& w, const ConvParams& p, const View& gx);
// gw (O, I / p.groups, kh, kw) = d(sum(gy * conv(x, w)))/dw
void conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p, const View& gw);

// y (M, N) = op(a) op(b) [+ bias (N)]; a is (M, K), or (K, M) when trans_a; b is (K, N), or
// (N, K) when trans_b.
void matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
            const View& y);
// y (B, M, N) = op(a[i]) op(b[i]), double accumulation.
void bmm(const View& a, const View& b, bool trans_a, bool trans_b, const View& y);

// x is (N, C) or (N, C, H, W); statistics per channel over the other axes, biased variance.
void batch_norm_forward_training(const View& x, const View* gamma, const View* beta, float eps,
                                 const View& y, const View& mean, const View& var);
void batch_norm_forward_inference(const View& x, const View* gamma, const View* beta,
                                  const View& mean, const View& var, float eps, const View& y);
// With M = N*H*W, xhat = (x - mean) * invstd:
//   gx = gamma * invstd / M * (M * gy - sum(gy) - xhat * sum(gy * xhat))
//   ggamma = sum(gy * xhat), gbeta = sum(gy). gamma null = 1; ggamma/gbeta null = not wanted.
void batch_norm_backward(const View& x, const View& gy, const View& mean, const View& var,
                         const View* gamma, float eps, const View& gx, const View* ggamma,
                         const View* gbeta);

// Max ignores padding; Avg divides by the window size (count_include_pad) or by the number of
// inputs inside the image.
void pool2d_forward(const PoolParams& p, const View& x, const View& y);
// Max routes each gy to the first maximum of its window in x (so it needs x, not a workspace).
void pool2d_backward(const PoolParams& p, const View& x, const View& gy, const View& gx);

}  // namespace gantry::reference
