#include "gan/objective/path_length.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gan/networks/style_generator.h"

namespace gantry::gan {

int64_t path_length_batch(int64_t global_batch, const PathLengthSettings& s) {
  return std::max<int64_t>(1, global_batch / s.batch_shrink);
}

Tensor path_lengths(StyleGenerator& g, const Tensor& z, const Tensor& labels, const RngKey& image_noise,
                    uint64_t first_example, bool create_graph) {
  const int64_t n = z.size(0);
  // One (N, layers, w_dim) tensor of the per-layer latents, as StyleGAN2's gen_ws: its gradient
  // holds each layer's share separately (the layers read slices of it).
  std::vector<Tensor> per_layer = g.style_latents(z, labels);
  const int64_t layers = static_cast<int64_t>(per_layer.size()), w_dim = g.w_dim();
  std::vector<Tensor> columns;
  columns.reserve(per_layer.size());
  for (const Tensor& w : per_layer) columns.push_back(ops::reshape(w, Shape{n, 1, w_dim}));
  Tensor ws = ops::concat(columns, 1);  // (N, layers, w_dim)
  std::vector<Tensor> read;
  read.reserve(per_layer.size());
  for (int64_t i = 0; i < layers; ++i) read.push_back(ops::reshape(ops::slice(ws, 1, i, i + 1), Shape{n, w_dim}));
  Tensor images = g.synthesize(read);  // (N, C, H, W)
  const Shape& s = images.shape();
  const int64_t per_example = s[1] * s[2] * s[3];
  Tensor y = ops::mul(ops::randn(s, image_noise, first_example * static_cast<uint64_t>(per_example), images.device()),
                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(s[2] * s[3]))));
  Tensor grads = autograd::grad({ops::sum(ops::mul(images, y))}, {ws}, {}, create_graph, create_graph)[0];
  return ops::sqrt(ops::mean(ops::sum(ops::square(grads), {2}), {1}));  // (N,)
}

float updated_path_length_mean(float pl_mean, float batch_mean, double decay) {
  return pl_mean + static_cast<float>(decay) * (batch_mean - pl_mean);
}

Tensor path_length_penalty(const Tensor& lengths, float pl_mean, const PathLengthSettings& s, float denominator) {
  Tensor squared = ops::square(ops::add(lengths, -pl_mean));
  return ops::mul(ops::sum(squared), s.weight * static_cast<float>(s.interval) / denominator);
}

}  // namespace gantry::gan
