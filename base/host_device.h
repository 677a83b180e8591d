// GANTRY_HD marks functions compiled for both the host and CUDA devices (the elementwise
// functors, Philox): __host__ __device__ under nvcc, nothing elsewhere. The one CUDA #if outside
// backend/cuda/ and the registry.
#pragma once

#if defined(__CUDACC__)
#define GANTRY_HD __host__ __device__
#else
#define GANTRY_HD
#endif
