#include "nn/reshape.h"

#include "core/ops/ops.h"

namespace gantry::nn {

namespace {

// Resolves one -1 entry so the product is `numel`; throws naming the layer otherwise.
std::vector<int64_t> resolve(const char* layer, std::vector<int64_t> sizes, int64_t numel,
                             const Shape& input) {
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      GANTRY_CHECK(infer < 0, layer, ": at most one size may be -1");
      infer = static_cast<int>(i);
    } else {
      known *= sizes[i];
    }
  }
  if (infer >= 0 && known > 0 && numel % known == 0) sizes[infer] = numel / known;
  int64_t product = 1;
  for (int64_t s : sizes) product *= s;
  GANTRY_CHECK(product == numel && (infer < 0 || known > 0), layer, ": cannot reshape input ",
               input.str(), " to sizes ", Shape(sizes).str());
  return sizes;
}

}  // namespace

Tensor Flatten::forward_impl(const Tensor& x) { return ops::flatten(x, start_, end_); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_) + ", end_dim=" + std::to_string(end_);
}

Unflatten::Unflatten(int dim, std::vector<int64_t> sizes)
    : Cloneable("Unflatten"), dim_(dim), sizes_(std::move(sizes)) {
  GANTRY_CHECK(!sizes_.empty(), "Unflatten: expected at least one size");
  for (int64_t s : sizes_)
    GANTRY_CHECK(s > 0 || s == -1, "Unflatten: expected positive sizes (or one -1), found ", s);
}

Tensor Unflatten::forward_impl(const Tensor& x) {
  int d = normalize_dim(dim_, x.dim(), "Unflatten");
  std::vector<int64_t> out;
  for (int i = 0; i < d; ++i) out.push_back(x.size(i));
  for (int64_t s : resolve("Unflatten", sizes_, x.size(d), x.shape())) out.push_back(s);
  for (int i = d + 1; i < x.dim(); ++i) out.push_back(x.size(i));
  return ops::reshape(x, Shape(out));
}

std::string Unflatten::extra_repr() const {
  return "dim=" + std::to_string(dim_) + ", unflattened_size=" + Shape(sizes_).str();
}

Reshape::Reshape(std::vector<int64_t> per_example_shape)
    : Cloneable("Reshape"), shape_(std::move(per_example_shape)) {
  for (int64_t s : shape_)
    GANTRY_CHECK(s > 0 || s == -1, "Reshape: expected positive sizes (or one -1), found ", s);
}

Tensor Reshape::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() >= 1, "Reshape: expected a batched input (N, ...), found a scalar");
  int64_t per_example = x.size(0) ? x.numel() / x.size(0) : 0;
  std::vector<int64_t> out{x.size(0)};
  for (int64_t s : resolve("Reshape", shape_, per_example, x.shape())) out.push_back(s);
  return ops::reshape(x, Shape(out));
}

std::string Reshape::extra_repr() const { return Shape(shape_).str(); }

}  // namespace gantry::nn
