#include "gan/spec/stats_reporter.h"

#include <algorithm>
#include <cstring>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry::gan {

int StatsReporter::declare(StatDeclaration declaration) {
  GANTRY_CHECK(!device_.defined(), "stats: \"", declaration.name, "\" declared after the first step");
  GANTRY_CHECK(declaration.reports_per_step >= 1, "stats: \"", declaration.name, "\" expected a positive number of "
               "reports per step, found ", declaration.reports_per_step);
  if (const int existing = find(declaration.name); existing >= 0) return existing;
  declared_.push_back(std::move(declaration));
  return static_cast<int>(declared_.size()) - 1;
}

int StatsReporter::find(std::string_view name) const {
  for (size_t i = 0; i < declared_.size(); ++i)
    if (declared_[i].name == name) return static_cast<int>(i);
  return -1;
}

void StatsReporter::begin_step(Device device) {
  const auto n = static_cast<int64_t>(declared_.size());
  if (!device_.defined() || !(device_.device() == device)) {
    device_ = ops::zeros(Shape{2 * n}, device);
    collective_.assign(1, device_);
    counts_.assign(declared_.size(), 0.f);
    host_.assign(2 * declared_.size(), 0.f);
    return;
  }
  ops::fill_(device_, 0.0);
  std::fill(counts_.begin(), counts_.end(), 0.f);
}

void StatsReporter::report(int index, const Tensor& value) {
  GANTRY_CHECK(device_.defined() && index >= 0 && index < static_cast<int>(declared_.size()),
               "stats: report of statistic ", index, " outside a step or of ", declared_.size(), " declared");
  NoGradGuard no_grad;
  ops::add_(ops::slice(device_, 0, index, index + 1), ops::reshape(ops::sum(value.detach()), Shape{1}));
  counts_[index] += static_cast<float>(value.numel());
}

void StatsReporter::report(std::string_view name, const Tensor& value) {
  const int index = find(name);
  GANTRY_CHECK(index >= 0, "stats: \"", name, "\" was reported but never declared (an objective term declares its "
               "statistics in ObjectiveTerm::statistics)");
  report(index, value);
}

void StatsReporter::reduce(const distribute::ReplicaContext& ctx) {
  const auto n = static_cast<int64_t>(declared_.size());
  if (n == 0) return;
  NoGradGuard no_grad;
  const Tensor counts = ops::slice(device_, 0, n, 2 * n);
  if (device_.device().is_cpu())
    std::memcpy(counts.raw_data(), counts_.data(), counts_.size() * sizeof(float));
  else
    ops::copy_(counts, ops::from_vector(counts_, Shape{n}));
  ctx.all_reduce_sum(collective_);
  // Element counts are integers, exact in f32 below 2^24 per step (ADA's sign sums too).
  if (device_.device().is_cpu()) {
    std::memcpy(host_.data(), device_.raw_data(), host_.size() * sizeof(float));
  } else {
    const Tensor on_host = device_.to(Device::cpu());
    std::memcpy(host_.data(), on_host.raw_data(), host_.size() * sizeof(float));
  }
}

float StatsReporter::value(int index) const {
  const StatDeclaration& d = declared_.at(static_cast<size_t>(index));
  if (d.reduce == StatReduce::SumOfShares) return static_cast<float>(sum(index) / d.reports_per_step);
  return count(index) > 0 ? static_cast<float>(sum(index) / count(index)) : 0.f;
}

}  // namespace gantry::gan
