// Host-side preparation of the kernels' index maps: broadcasting and merging of dimensions.
#include "backend/cuda/kernels.h"

#include "base/error.h"

namespace gantry::cuda {

namespace {

// Strides of `in` broadcast to a rank-`rank` output of `out` (right-aligned; size 1 -> 0).
void broadcast_strides(const Shape& out, const Shape& in, int64_t* strides) {
  auto contiguous = in.strides();
  int shift = out.rank() - in.rank();
  GANTRY_CHECK(shift >= 0, "cuda backend: cannot broadcast ", in.str(), " to ", out.str());
  for (int d = 0; d < out.rank(); ++d) {
    int k = d - shift;
    strides[d] = (k < 0 || in[k] == 1) ? 0 : contiguous[k];
  }
}

// Merges adjacent dimensions d-1, d where every operand steps contiguously across them, and
// drops size-1 dimensions: fewer divisions per element in the kernel.
template <int N>
void coalesce(OffsetCalc<N>& c) {
  int r = 0;
  for (int d = 0; d < c.rank; ++d) {
    if (c.sizes[d] == 1) continue;
    if (r > 0) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        mergeable = mergeable && c.strides[k][r - 1] == c.strides[k][d] * c.sizes[d];
      if (mergeable) {
        c.sizes[r - 1] *= c.sizes[d];
        for (int k = 0; k < N; ++k) c.strides[k][r - 1] = c.strides[k][d];
        continue;
      }
    }
    c.sizes[r] = c.sizes[d];
    for (int k = 0; k < N; ++k) c.strides[k][r] = c.strides[k][d];
    ++r;
  }
  if (r == 0) {  // a single element
    c.sizes[0] = 1;
    for (int k = 0; k < N; ++k) c.strides[k][0] = 0;
    r = 1;
  }
  c.rank = r;
}

template <int N>
OffsetCalc<N> make_calc(const Shape& out, const Shape* const (&ins)[N]) {
  OffsetCalc<N> c;
  c.rank = out.rank();
  for (int d = 0; d < out.rank(); ++d) c.sizes[d] = out[d];
  for (int k = 0; k < N; ++k) broadcast_strides(out, *ins[k], c.strides[k]);
  coalesce(c);
  return c;
}

}  // namespace

OffsetCalc<2> make_offset_calc(const Shape& out, const Shape& a, const Shape& b) {
  const Shape* const ins[2] = {&a, &b};
  return make_calc<2>(out, ins);
}

OffsetCalc<3> make_offset_calc(const Shape& out, const Shape& a, const Shape& b, const Shape& c) {
  const Shape* const ins[3] = {&a, &b, &c};
  return make_calc<3>(out, ins);
}

OffsetCalc<2> make_copy_calc(const StridedView& src, const StridedView& dst) {
  OffsetCalc<2> c;
  c.rank = src.shape.rank();
  for (int d = 0; d < c.rank; ++d) {
    c.sizes[d] = src.shape[d];
    c.strides[0][d] = src.strides[d];
    c.strides[1][d] = dst.strides[d];
  }
  coalesce(c);
  return c;
}

ReducePlan make_reduce_plan(const Shape& x_shape, uint32_t axes_mask) {
  ReducePlan p;
  auto strides = x_shape.strides();
  // Split into kept and reduced dimensions, merging runs that stay contiguous.
  auto push = [](int& rank, int64_t* sizes, int64_t* st, int64_t size, int64_t stride) {
    if (size == 1) return;
    if (rank > 0 && st[rank - 1] == stride * size) {
      sizes[rank - 1] *= size;
      st[rank - 1] = stride;
      return;
    }
    sizes[rank] = size;
    st[rank] = stride;
    ++rank;
  };
  for (int d = 0; d < x_shape.rank(); ++d) {
    if (axes_mask & (1u << d)) {
      push(p.red_rank, p.red_sizes, p.red_strides, x_shape[d], strides[d]);
      p.n_red *= x_shape[d];
    } else {
      push(p.out_rank, p.out_sizes, p.out_strides, x_shape[d], strides[d]);
      p.n_out *= x_shape[d];
    }
  }
  return p;
}

}  // namespace gantry::cuda
