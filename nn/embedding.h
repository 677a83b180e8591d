// Embedding table as torch.nn.Embedding: weight [num_embeddings, embedding_dim] ~ N(0, 1);
// forward maps i64 indices (...) to (..., embedding_dim).
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class Embedding : public Cloneable<Embedding> {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, RngKey key = {});

  int64_t num_embeddings() const { return num_; }
  int64_t embedding_dim() const { return dim_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& index) override;

 private:
  int64_t num_, dim_;
};

}  // namespace gantry::nn
