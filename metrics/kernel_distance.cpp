#include "metrics/kernel_distance.h"

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "base/error.h"
#include "metrics/feature_matrix.h"

namespace gantry::metrics {

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// `m` distinct row indices of [0, n): the first m of a partial Fisher-Yates shuffle.
std::vector<int64_t> draw_subset(int64_t n, int64_t m, std::mt19937_64& rng) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = 0; i < m; ++i) {
    std::uniform_int_distribution<int64_t> pick(i, n - 1);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(pick(rng))]);
  }
  order.resize(static_cast<size_t>(m));
  return order;
}

RowMajor gather_rows(const Eigen::Map<const RowMajor>& all, const std::vector<int64_t>& rows) {
  RowMajor out(static_cast<Eigen::Index>(rows.size()), all.cols());
  for (size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = all.row(rows[i]);
  return out;
}

// (x y^T / d + 1)^3 summed: the polynomial kernel matrix's sum, and its trace when asked.
double kernel_sum(const RowMajor& x, const RowMajor& y, double d, double* trace) {
  Eigen::MatrixXd k = (x * y.transpose()).array() / d + 1.0;
  k = k.array().cube();
  if (trace) *trace = k.trace();
  return k.sum();
}

}  // namespace

KernelDistance kernel_distance(const Tensor& real, const Tensor& fake, const KernelDistanceOptions& options) {
  GANTRY_CHECK(options.num_subsets >= 1, "kernel_distance: num_subsets: expected >= 1, found ", options.num_subsets);
  GANTRY_CHECK(options.max_subset_size >= 2, "kernel_distance: max_subset_size: expected >= 2, found ",
               options.max_subset_size);
  const FeaturePair f = feature_pair(real, fake, "kernel_distance");
  const std::vector<double>& real_rows = f.real;
  const std::vector<double>& fake_rows = f.fake;
  const int64_t n_real = f.n_real, n_fake = f.n_fake, dim = f.dim;
  GANTRY_CHECK(n_real >= 2 && n_fake >= 2, "kernel_distance: expected at least 2 real and 2 fake features, found ",
               n_real, " and ", n_fake);
  const Eigen::Map<const RowMajor> all_real(real_rows.data(), n_real, dim);
  const Eigen::Map<const RowMajor> all_fake(fake_rows.data(), n_fake, dim);
  const int64_t m = std::min({n_real, n_fake, options.max_subset_size});
  const double d = static_cast<double>(dim), md = static_cast<double>(m);
  std::mt19937_64 rng(options.seed);
  std::vector<double> estimates;
  estimates.reserve(static_cast<size_t>(options.num_subsets));
  for (int64_t s = 0; s < options.num_subsets; ++s) {
    const RowMajor x = gather_rows(all_fake, draw_subset(n_fake, m, rng));  // StyleGAN2-ADA: fakes first
    const RowMajor y = gather_rows(all_real, draw_subset(n_real, m, rng));
    double trace_xx = 0, trace_yy = 0;
    const double a = kernel_sum(x, x, d, &trace_xx) + kernel_sum(y, y, d, &trace_yy);
    const double b = kernel_sum(x, y, d, nullptr);
    estimates.push_back(((a - trace_xx - trace_yy) / (md - 1) - b * 2 / md) / md);
  }
  KernelDistance result;
  result.subset_size = m;
  result.value = std::accumulate(estimates.begin(), estimates.end(), 0.0) / static_cast<double>(estimates.size());
  double sq = 0;
  for (double e : estimates) sq += (e - result.value) * (e - result.value);
  result.std = std::sqrt(sq / static_cast<double>(estimates.size()));
  return result;
}

}  // namespace gantry::metrics
