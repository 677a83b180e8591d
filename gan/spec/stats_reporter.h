// Note [stats reporter]: the values a training step reports (each update's losses and their
// parts, a term's own statistics such as ADA's E[sign D(real)]) go through one StatsReporter per
// replica, as StyleGAN2-ADA's training_stats.report(name, value). Every replica declares the
// same statistics in the same order before the first step; report() adds a tensor's sum to the
// statistic's accumulator on the replica's device (no host sync), and reduce() ends the step with
// one all-reduce of [sums | element counts] and one read to the host. A statistic nobody
// reported in a step (a lazy regulariser between its steps, a stand-in replica) has count 0, and
// readers keep its last value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "distribute/strategy.h"

namespace gantry::gan {

// How a statistic's reports over a step and over the replicas make its value.
enum class StatReduce {
  // Each report is this replica's share of a global mean (a loss over the global denominator):
  // the value is the sum over replicas and reports divided by `reports_per_step` (the updates of
  // its network in the step), i.e. the mean over the step's updates of the global loss.
  SumOfShares,
  // The mean of every reported element over the replicas and the step (sum / count).
  MeanOfElements,
};

struct StatDeclaration {
  std::string name;  // e.g. "D/r1_penalty", "augment/real_sign"
  StatReduce reduce = StatReduce::SumOfShares;
  int reports_per_step = 1;  // SumOfShares only
};

class StatsReporter {
 public:
  // Declares a statistic before the first step and returns its index; a name declared twice
  // keeps its first declaration (and index).
  int declare(StatDeclaration declaration);
  // The index of `name`, or -1.
  int find(std::string_view name) const;
  const std::vector<StatDeclaration>& declarations() const { return declared_; }

  // Zeroes every accumulator for a new step (on `device` at the first step).
  void begin_step(Device device);
  // Adds sum(value) (detached, f32, on the replica's device) and its element count to the
  // statistic `index`; reported by name, an undeclared name is an error naming it.
  void report(int index, const Tensor& value);
  void report(std::string_view name, const Tensor& value);
  // Ends the step on every replica: one all-reduce of the sums and counts, one host read.
  void reduce(const distribute::ReplicaContext& ctx);

  // After reduce(): the statistic's value by its StatReduce, the raw sums over the replicas, and
  // whether anyone reported it this step.
  float value(int index) const;
  double sum(int index) const { return host_[index]; }
  double count(int index) const { return host_[declared_.size() + index]; }
  bool reported(int index) const { return count(index) > 0; }

 private:
  std::vector<StatDeclaration> declared_;
  Tensor device_;            // [sums | counts] on the replica's device
  std::vector<float> counts_;  // this step's element counts, on the host until reduce()
  std::vector<float> host_;    // [sums | counts] over every replica, after reduce()
  std::vector<Tensor> collective_;  // {device_}, kept so reduce() allocates no list
};

}  // namespace gantry::gan
