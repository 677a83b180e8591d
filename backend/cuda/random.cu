// Philox fills. Each element is a pure function of (key, offset + i) — Note [random streams] —
// computed by the same core/philox.h functions the CPU backend uses.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

// One thread per Philox block: the block's four words are the uniforms of stream elements
// 4j .. 4j+3, of which those in [offset, offset + n) are written.
__global__ void uniform_kernel(float* __restrict__ y, int64_t n, RngKey key, uint64_t offset,
                               uint64_t first_block, int64_t n_blocks, float a, float b) {
  const float width = b - a;
  GANTRY_GRID_STRIDE_LOOP(j, n_blocks) {
    uint64_t block = first_block + static_cast<uint64_t>(j);
    Philox4 words = philox_block(key, block);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint64_t s = block * 4 + k;  // stream element
      if (s < offset || s - offset >= static_cast<uint64_t>(n)) continue;
      float u = uint_to_unit(words.v[k]);
      y[s - offset] = __fadd_rn(a, __fmul_rn(width, u));  // no fma: equal to the CPU
    }
  }
}

__global__ void normal_kernel(float* __restrict__ y, int64_t n, RngKey key, uint64_t offset,
                              float mean, float std) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    float z = philox_normal(key, offset + static_cast<uint64_t>(i));
    y[i] = __fadd_rn(mean, __fmul_rn(std, z));
  }
}

}  // namespace

void launch_random(float* y, int64_t n, Distribution dist, RngKey key, uint64_t offset, float a,
                   float b, cudaStream_t stream) {
  if (n == 0) return;
  if (dist == Distribution::Uniform) {
    uint64_t first_block = offset / 4;
    uint64_t last_block = (offset + static_cast<uint64_t>(n) - 1) / 4;
    auto n_blocks = static_cast<int64_t>(last_block - first_block + 1);
    uniform_kernel<<<blocks_for(n_blocks), kThreads, 0, stream>>>(y, n, key, offset, first_block,
                                                                 n_blocks, a, b);
  } else {
    normal_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, n, key, offset, a, b);
  }
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
