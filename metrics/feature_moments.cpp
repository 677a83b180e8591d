#include "metrics/feature_moments.h"

#include <Eigen/Dense>

#include "base/error.h"
#include "metrics/feature_matrix.h"

namespace gantry::metrics {

namespace {
using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
}  // namespace

FeatureMoments::FeatureMoments(int64_t dim)
    : dim_(dim), mean_(static_cast<size_t>(dim), 0.0), m2_(static_cast<size_t>(dim * dim), 0.0) {
  GANTRY_CHECK(dim >= 1, "FeatureMoments: expected a feature dimension >= 1, found ", dim);
}

void FeatureMoments::add(const Tensor& features) {
  std::vector<double> rows = feature_rows(features, "FeatureMoments::add");
  if (dim_ == 0 && count_ == 0) *this = FeatureMoments(features.size(1));
  GANTRY_CHECK(features.size(1) == dim_, "FeatureMoments::add: expected features (N, ", dim_, "), found ",
               features.shape().str());
  add(rows.data(), features.size(0));
}

void FeatureMoments::add(const double* rows, int64_t count) {
  GANTRY_CHECK(dim_ >= 1, "FeatureMoments::add: the moments have no dimension yet");
  if (count == 0) return;
  Eigen::Map<const RowMajor> x(rows, count, dim_);
  FeatureMoments batch;
  batch.dim_ = dim_;
  batch.count_ = count;
  batch.mean_.resize(static_cast<size_t>(dim_));
  batch.m2_.assign(static_cast<size_t>(dim_ * dim_), 0.0);
  Eigen::Map<Eigen::RowVectorXd> mean(batch.mean_.data(), dim_);
  mean = x.colwise().mean();
  RowMajor centred = x.rowwise() - mean;
  Eigen::Map<RowMajor> m2(batch.m2_.data(), dim_, dim_);
  m2.noalias() = centred.transpose() * centred;
  merge(batch);
}

void FeatureMoments::merge(const FeatureMoments& other) {
  if (other.count_ == 0 && other.dim_ == 0) return;
  if (count_ == 0 && dim_ == 0) {
    *this = other;
    return;
  }
  GANTRY_CHECK(other.dim_ == dim_, "FeatureMoments::merge: expected moments of dimension ", dim_, ", found ",
               other.dim_);
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(count_), nb = static_cast<double>(other.count_);
  const double n = na + nb;
  Eigen::Map<Eigen::VectorXd> mean(mean_.data(), dim_);
  Eigen::Map<const Eigen::VectorXd> other_mean(other.mean_.data(), dim_);
  const Eigen::VectorXd delta = other_mean - mean;
  Eigen::Map<RowMajor> m2(m2_.data(), dim_, dim_);
  Eigen::Map<const RowMajor> other_m2(other.m2_.data(), dim_, dim_);
  m2 += other_m2 + (na * nb / n) * (delta * delta.transpose());
  mean += delta * (nb / n);
  count_ += other.count_;
}

std::vector<double> FeatureMoments::covariance() const {
  GANTRY_CHECK(count_ >= 2, "FeatureMoments::covariance: expected at least 2 feature vectors, found ", count_);
  std::vector<double> cov(m2_);
  for (double& v : cov) v /= static_cast<double>(count_ - 1);
  return cov;
}

std::vector<double> FeatureMoments::serialize() const {
  std::vector<double> flat;
  flat.reserve(serialized_size(dim_));
  flat.push_back(static_cast<double>(dim_));
  flat.push_back(static_cast<double>(count_));
  flat.insert(flat.end(), mean_.begin(), mean_.end());
  flat.insert(flat.end(), m2_.begin(), m2_.end());
  return flat;
}

FeatureMoments FeatureMoments::deserialize(std::span<const double> flat, const std::string& source) {
  GANTRY_CHECK(flat.size() >= 2, source, ": expected serialized feature moments, found ", flat.size(), " values");
  const double dim = flat[0], count = flat[1];
  GANTRY_CHECK(dim >= 1 && dim <= 1e6 && dim == static_cast<double>(static_cast<int64_t>(dim)), source,
               ": expected a feature dimension >= 1, found ", dim);
  GANTRY_CHECK(count >= 0 && count == static_cast<double>(static_cast<int64_t>(count)), source,
               ": expected a feature count >= 0, found ", count);
  FeatureMoments m(static_cast<int64_t>(dim));
  GANTRY_CHECK(flat.size() == serialized_size(m.dim_), source, ": expected ", serialized_size(m.dim_),
               " values for dimension ", m.dim_, ", found ", flat.size());
  m.count_ = static_cast<int64_t>(count);
  std::copy(flat.begin() + 2, flat.begin() + 2 + m.dim_, m.mean_.begin());
  std::copy(flat.begin() + 2 + m.dim_, flat.end(), m.m2_.begin());
  return m;
}

}  // namespace gantry::metrics
