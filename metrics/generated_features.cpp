#include "metrics/generated_features.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "distribute/sharding.h"

namespace gantry::metrics {

namespace {

// The generator a replica samples from, in eval mode: its own G, or a copy of the EMA G on its
// device (the EMA module is one per process; copies keep replicas from sharing it).
nn::ModulePtr sampling_generator(gan::GanEstimator& estimator, int local_index, Device device, bool use_ema) {
  if (use_ema) {
    GANTRY_CHECK(estimator.generator_ema() != nullptr, "metrics: use_ema is set, but the run has no EMA generator "
                 "(train.generator_ema.type is \"none\")");
    nn::ModulePtr copy = estimator.generator_ema()->clone(device);
    copy->eval();
    return copy;
  }
  return estimator.replica(local_index).generator.module;
}

// Runs fn(generator) with the generator in eval mode, restoring its mode afterwards.
template <typename Fn>
void with_eval_mode(nn::Module& g, Fn&& fn) {
  const bool was_training = g.is_training();
  g.eval();
  try {
    fn();
  } catch (...) {
    g.train(was_training);
    throw;
  }
  g.train(was_training);
}

}  // namespace

std::vector<int64_t> generated_labels(int64_t count, int64_t num_classes) {
  GANTRY_CHECK(num_classes >= 1, "generated_labels: expected num_classes >= 1, found ", num_classes);
  std::vector<int64_t> labels(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = generated_label(static_cast<int64_t>(i), num_classes);
  return labels;
}

Tensor generate_images(nn::Module& generator, const gan::GanSpec& spec, const GeneratedSetOptions& options,
                       int64_t begin, int64_t n) {
  NoGradGuard no_grad;
  Shape shape{n};
  for (int64_t d : spec.noise_shape) shape.push_back(d);
  const Device device = generator.device();
  Tensor z = ops::randn(shape, RngKey{options.seed, stream_id(kMetricNoisePurpose)},
                        static_cast<uint64_t>(begin * spec.noise_shape.numel()), device);
  Tensor images;
  if (spec.num_classes == 0) {
    images = generator.forward(z);
  } else {
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = generated_label(begin + i, spec.num_classes);
    images = generator.forward(z, ops::from_vector(labels, Shape{n}).to(device));
  }
  // Generators without a final tanh (stylegan2) overshoot [-1, 1]; metrics see the images as
  // they would be saved, clamped, as StyleGAN2-ADA's metrics quantise them to 8 bits.
  return ops::clamp(images, -1.0f, 1.0f);
}

FeatureMoments generated_moments(gan::GanEstimator& estimator, std::vector<std::unique_ptr<FeatureNetwork>>& networks,
                                 const GeneratedSetOptions& options) {
  distribute::Strategy& strategy = estimator.strategy();
  GANTRY_CHECK(static_cast<int>(networks.size()) == strategy.num_local_replicas(), "generated_moments: expected ",
               strategy.num_local_replicas(), " feature networks (one per local replica), found ", networks.size());
  GANTRY_CHECK(options.count >= 2 && options.batch_size >= 1, "generated_moments: expected count >= 2 and "
               "batch_size >= 1, found ", options.count, " and ", options.batch_size);
  const int64_t dim = networks[0]->feature_dim();
  std::vector<FeatureMoments> merged(networks.size());
  strategy.run([&](const distribute::ReplicaContext& ctx) {
    const distribute::Shard shard = distribute::shard_of(options.count, ctx.num_replicas, ctx.global_index);
    FeatureMoments mine(dim);
    nn::ModulePtr g = sampling_generator(estimator, ctx.local_index, ctx.device, options.use_ema);
    with_eval_mode(*g, [&] {
      for (int64_t begin = shard.begin; begin < shard.begin + shard.size; begin += options.batch_size) {
        const int64_t n = std::min(options.batch_size, shard.begin + shard.size - begin);
        Tensor images = generate_images(*g, estimator.spec(), options, begin, n);
        mine.add(networks[static_cast<size_t>(ctx.local_index)]->extract(images).features);
      }
    });
    // Gather every replica's moments bit for bit (doubles as pairs of floats) and merge in rank
    // order: the same result on every rank.
    const std::vector<double> flat = mine.serialize();
    FeatureMoments all(dim);
    if (ctx.communicator == nullptr || ctx.num_replicas == 1) {
      all.merge(mine);
    } else {
      std::vector<float> in(flat.size() * 2);
      std::memcpy(in.data(), flat.data(), flat.size() * sizeof(double));
      std::vector<float> out(in.size() * static_cast<size_t>(ctx.num_replicas));
      ctx.communicator->all_gather(in, out);
      std::vector<double> rank(flat.size());
      for (int r = 0; r < ctx.num_replicas; ++r) {
        std::memcpy(rank.data(), out.data() + static_cast<size_t>(r) * in.size(), flat.size() * sizeof(double));
        all.merge(FeatureMoments::deserialize(rank, "replica " + std::to_string(r) + "'s feature moments"));
      }
    }
    merged[static_cast<size_t>(ctx.local_index)] = std::move(all);
  });
  return merged[0];
}

FeatureBatch gathered_generated_features(gan::GanEstimator& estimator,
                                         std::vector<std::unique_ptr<FeatureNetwork>>& networks,
                                         const GeneratedSetOptions& options, bool want_logits) {
  distribute::Strategy& strategy = estimator.strategy();
  GANTRY_CHECK(static_cast<int>(networks.size()) == strategy.num_local_replicas(), "gathered_generated_features: "
               "expected ", strategy.num_local_replicas(), " feature networks (one per local replica), found ",
               networks.size());
  GANTRY_CHECK(options.count >= 2 && options.batch_size >= 1, "gathered_generated_features: expected count >= 2 "
               "and batch_size >= 1, found ", options.count, " and ", options.batch_size);
  GANTRY_CHECK(!want_logits || networks[0]->has_logits(), "gathered_generated_features: logits asked for, but the "
               "feature network has none");
  GANTRY_CHECK(options.count >= strategy.num_replicas_in_sync(), "gathered_generated_features: expected at least "
               "one image per replica (", strategy.num_replicas_in_sync(), "), found ", options.count);
  const int64_t dim = networks[0]->feature_dim();
  std::vector<FeatureBatch> results(networks.size());
  strategy.run([&](const distribute::ReplicaContext& ctx) {
    const distribute::Shard shard = distribute::shard_of(options.count, ctx.num_replicas, ctx.global_index);
    std::vector<FeatureBatch> batches;
    nn::ModulePtr g = sampling_generator(estimator, ctx.local_index, ctx.device, options.use_ema);
    with_eval_mode(*g, [&] {
      for (int64_t begin = shard.begin; begin < shard.begin + shard.size; begin += options.batch_size) {
        const int64_t n = std::min(options.batch_size, shard.begin + shard.size - begin);
        Tensor images = generate_images(*g, estimator.spec(), options, begin, n);
        batches.push_back(networks[static_cast<size_t>(ctx.local_index)]->extract(images, want_logits));
      }
    });
    if (ctx.communicator == nullptr || ctx.num_replicas == 1) {
      results[static_cast<size_t>(ctx.local_index)] = concat_feature_batches(batches);
      return;
    }
    // Shards differ in size by at most one: every rank sends rows for the largest, zero-padded.
    int64_t rows = 0, logit_dim = 0;
    for (int r = 0; r < ctx.num_replicas; ++r) rows = std::max(rows, distribute::shard_of(options.count, ctx.num_replicas, r).size);
    // Every rank's buffer: rows x dim features, then rows x K logits (K is the network's, the
    // same on every rank).
    const FeatureBatch mine = concat_feature_batches(batches);
    std::vector<float> in = mine.features.to_vector();
    if (want_logits) {
      logit_dim = mine.logits.size(1);
      const std::vector<float> l = mine.logits.to_vector();
      in.resize(static_cast<size_t>(rows * dim));
      in.insert(in.end(), l.begin(), l.end());
    }
    const size_t per_rank = static_cast<size_t>(rows * (dim + logit_dim));
    in.resize(per_rank, 0.f);
    std::vector<float> out(per_rank * static_cast<size_t>(ctx.num_replicas));
    ctx.communicator->all_gather(in, out);
    std::vector<float> features, logits;
    for (int r = 0; r < ctx.num_replicas; ++r) {
      const int64_t n = distribute::shard_of(options.count, ctx.num_replicas, r).size;
      const float* base = out.data() + static_cast<size_t>(r) * per_rank;
      features.insert(features.end(), base, base + n * dim);
      if (want_logits) logits.insert(logits.end(), base + rows * dim, base + rows * dim + n * logit_dim);
    }
    FeatureBatch all;
    all.features = ops::from_vector(features, Shape{options.count, dim});
    if (want_logits) all.logits = ops::from_vector(logits, Shape{options.count, logit_dim});
    results[static_cast<size_t>(ctx.local_index)] = std::move(all);
  });
  return results[0];
}

FeatureBatch generated_features(gan::GanEstimator& estimator, FeatureNetwork& network,
                                const GeneratedSetOptions& options, bool want_logits) {
  GANTRY_CHECK(options.count >= 1 && options.batch_size >= 1, "generated_features: expected count >= 1 and "
               "batch_size >= 1, found ", options.count, " and ", options.batch_size);
  nn::ModulePtr g = sampling_generator(estimator, 0, estimator.strategy().local_devices().at(0), options.use_ema);
  std::vector<FeatureBatch> batches;
  with_eval_mode(*g, [&] {
    for (int64_t begin = 0; begin < options.count; begin += options.batch_size) {
      const int64_t n = std::min(options.batch_size, options.count - begin);
      batches.push_back(network.extract(generate_images(*g, estimator.spec(), options, begin, n), want_logits));
    }
  });
  return concat_feature_batches(batches);
}

}  // namespace gantry::metrics
