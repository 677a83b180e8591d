#include "nn/embedding.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, RngKey key)
    : Cloneable("Embedding"), num_(num_embeddings), dim_(embedding_dim) {
  GANTRY_CHECK(num_ > 0 && dim_ > 0, "Embedding: expected positive sizes, found ", num_, " x ",
               dim_);
  register_parameter("weight", ops::empty({num_, dim_}));
  reset_parameters(key);
}

void Embedding::reset_parameters(RngKey key) {
  init::normal_(get("weight"), 0.0, 1.0, init::key_for(key, "weight"));
}

Tensor Embedding::forward_impl(const Tensor& index) {
  GANTRY_CHECK(index.dtype() == DType::I64, "Embedding: expected i64 indices, found ",
               to_string(index.dtype()));
  return ops::embedding(get("weight"), index);
}

std::string Embedding::extra_repr() const {
  return std::to_string(num_) + ", " + std::to_string(dim_);
}

}  // namespace gantry::nn
