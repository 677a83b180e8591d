// Shared by the metrics benchmarks (bench/metrics/*.cpp, one binary: gantry_metrics_bench).
#pragma once

#include "metrics/inception_v3.h"

namespace gantry {

// The FID Inception-v3 on random weights (He-uniform convs, batch norm near the identity), which
// costs the same as the real ones; built once.
const metrics::InceptionV3& random_inception();

// The process's CPU seconds so far (all threads, user + system).
double process_cpu_seconds();

}  // namespace gantry
