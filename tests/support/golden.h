// Reader for the golden reference files written by tests/golden/make_golden.py, and a
// comparison of Gantry tensors against them. Test support only.
//
// File format (text, no dependency), one entry per pair of non-comment lines:
//     # comment
//     <name> <rank> <dim 0> ... <dim rank-1>
//     <numel values, whitespace separated>
// A scalar has rank 0 and one value; integer arrays are stored as (exact) floats.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/ops/ops.h"

namespace gantry::testing {

struct GoldenArray {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

class GoldenFile {
 public:
  // Parses `path`; throws gantry::Error naming the file, line and entry on malformed input.
  explicit GoldenFile(const std::string& path);
  // golden_dir()/<name>.txt (support/test_paths.h)
  static GoldenFile load(const std::string& case_name);

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return arrays_.count(name) != 0; }
  // Throws naming the file and the entry when the entry is missing.
  const GoldenArray& get(const std::string& name) const;
  std::vector<std::string> names() const;

  // The entry as an f32 CPU tensor (a leaf; requires_grad as asked).
  Tensor tensor(const std::string& name, bool requires_grad = false) const;
  // The entry as an i64 CPU tensor; throws when a value is not an integer.
  Tensor index_tensor(const std::string& name) const;

 private:
  std::string path_;
  std::map<std::string, GoldenArray> arrays_;
};

struct Tolerance {
  double atol;
  double rtol;
};

// Success when `got` has the entry's shape and every element satisfies
// |got - ref| <= atol + rtol * |ref| (NaN never passes). The failure message names the file,
// the entry, how many elements fail, and the worst one with both values.
::testing::AssertionResult golden_close(const Tensor& got, const GoldenFile& file,
                                        const std::string& name, Tolerance tol);

// cos (or sin) of freq * i over the flattened index i, in double rounded to f32: inputs and loss
// weights make_golden.py computes the same way instead of storing them.
Tensor golden_wave(const Shape& shape, double freq, bool cosine);

// The tolerance of the ops' golden tests: values computed the same way up to float order.
inline constexpr Tolerance kSimple{1e-5, 1e-4};

using NamedInputs = std::vector<std::pair<std::string, Tensor>>;

// Compares `out` with the entry "out", then the gradients of sum(out * w_out) with respect to
// each named input with the entries "grad_<name>".
void expect_forward_and_grads(const GoldenFile& f, const Tensor& out, const NamedInputs& inputs,
                              Tolerance tol = kSimple);

}  // namespace gantry::testing
