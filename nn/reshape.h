// Shape layers: Flatten (torch.nn.Flatten), Unflatten (torch.nn.Unflatten) and Reshape, which
// keeps the batch dimension and reshapes the rest to a fixed per-example shape (a -1 entry is
// inferred).
#pragma once

#include <vector>

#include "nn/module.h"

namespace gantry::nn {

class Flatten : public Cloneable<Flatten> {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1)
      : Cloneable("Flatten"), start_(start_dim), end_(end_dim) {}
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  int start_, end_;
};

class Unflatten : public Cloneable<Unflatten> {
 public:
  Unflatten(int dim, std::vector<int64_t> sizes);
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  int dim_;
  std::vector<int64_t> sizes_;
};

class Reshape : public Cloneable<Reshape> {
 public:
  explicit Reshape(std::vector<int64_t> per_example_shape);
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, ...) -> (N, shape...)

 private:
  std::vector<int64_t> shape_;
};

}  // namespace gantry::nn
