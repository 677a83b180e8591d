// A tensor's values written by hand in the CPU backend's blocked activation layout (Note [blocked
// activations], Note [bf16 activations] in core/storage.h), for tests of the blocked loops.
// Test support only.
#pragma once

#include "core/tensor.h"

namespace gantry::testing {

// A fresh tensor holding t's (N, C, H, W) values in the ChannelBlocked layout of the current
// channel block B: element (n, c, p) of the plain (N, C, H*W) order at ((n, c / B, p) * B + c % B).
// With `bf16` the values (which must be bf16 values) are stored so in the buffer's first half
// (ChannelBlockedBf16).
Tensor blocked_copy(const Tensor& t, bool bf16 = false);

}  // namespace gantry::testing
