#include "metrics/inception_score.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "metrics/feature_matrix.h"

namespace gantry::metrics {

InceptionScore inception_score(const Tensor& logits, int64_t splits) {
  std::vector<double> p = feature_rows(logits, "inception_score: logits");
  const int64_t n = logits.size(0), classes = logits.size(1);
  GANTRY_CHECK(splits >= 1 && n >= splits, "inception_score: expected at least splits = ", splits,
               " rows of logits, found ", n);
  for (int64_t i = 0; i < n; ++i) {  // softmax of each row, in place
    double* row = p.data() + i * classes;
    const double top = *std::max_element(row, row + classes);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) total += (row[c] = std::exp(row[c] - top));
    for (int64_t c = 0; c < classes; ++c) row[c] /= total;
  }
  std::vector<double> scores;
  for (int64_t s = 0; s < splits; ++s) {
    const int64_t begin = s * n / splits, end = (s + 1) * n / splits;
    std::vector<double> marginal(static_cast<size_t>(classes), 0.0);
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < classes; ++c) marginal[static_cast<size_t>(c)] += p[static_cast<size_t>(i * classes + c)];
    for (double& m : marginal) m /= static_cast<double>(end - begin);
    double kl = 0;
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < classes; ++c) {
        const double q = p[static_cast<size_t>(i * classes + c)];
        if (q > 0) kl += q * (std::log(q) - std::log(marginal[static_cast<size_t>(c)]));
      }
    scores.push_back(std::exp(kl / static_cast<double>(end - begin)));
  }
  InceptionScore result;
  for (double s : scores) result.mean += s;
  result.mean /= static_cast<double>(splits);
  for (double s : scores) result.std += (s - result.mean) * (s - result.mean);
  result.std = std::sqrt(result.std / static_cast<double>(splits));
  return result;
}

}  // namespace gantry::metrics
