// The CPU's half of the convolution roofline (Note [conv roofline] in backend/conv_roofline.h):
// a recorded convolution timed as a bare oneDNN primitive. Reached through raw_conv_seconds
// there.
#pragma once

#include "backend/conv_roofline.h"

namespace gantry::cpu {

// Seconds per call of the faster of oneDNN's blocked (format_tag::any) and plain (nchw)
// primitive for `call` at its thread budget, on data already in the primitive's layout, timed
// for at least `min_seconds` per layout (best of five rounds).
double raw_conv_seconds(const ConvCall& call, double min_seconds);

}  // namespace gantry::cpu
