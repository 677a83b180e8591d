// What a GAN is made of, independent of where it runs: the generator and discriminator
// *functions* (factories the strategy calls once per replica), the noise they take, the objective
// (a list of terms), the optimizers and the train-step schedule.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "augment/augment_spec.h"
#include "gan/spec/loss_scaler.h"
#include "gan/spec/objective_term.h"
#include "gan/spec/train_schedule.h"
#include "nn/lr_schedule.h"
#include "nn/module.h"
#include "nn/optimizer.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

// Builds a network on a device; called once per replica. Initialisation may use `key`
// (replica 0's values are broadcast to the others afterwards anyway).
using NetworkFn = std::function<nn::ModulePtr(Device device, RngKey key)>;
// Builds an optimizer over a replica's parameters.
using OptimizerFn = std::function<std::unique_ptr<nn::Optimizer>(const std::vector<Tensor>& params)>;

// An exponential moving average of the generator's weights (the "EMA generator"), updated after
// every global step from replica 0 (all replicas are identical). Either a fixed decay, or a
// half-life in thousands of images with an optional ramp-up as in StyleGAN2-ADA.
struct GeneratorEma {
  bool enabled = false;
  std::optional<double> decay;   // set: fixed decay; unset: half-life
  // >= 0 (0: the average is the current weights), or a schedule of it from the images seen before
  // each step (Note [value schedules]), as R3GAN grows it from 0
  nn::ValueSchedule half_life_kimg{10.0};
  std::optional<double> rampup;  // StyleGAN2-ADA uses 0.05; caps a scheduled half-life too
};

// How one network's optimizer hyperparameters move during training; what is unset keeps the
// optimizer's own value. Set at the start of every global step, on every replica alike.
struct OptimizerSchedules {
  // The lr as a function of the global step and the optimizer's lr (nn/lr_schedule.h).
  std::optional<nn::ValueSchedule> lr_schedule;
  // The lr over the images seen (Note [value schedules]); never with lr_schedule.
  std::optional<nn::ValueSchedule> lr;
  std::optional<nn::ValueSchedule> beta2;  // adam, adamw
  // The values above are corrected as constant ones are, lr x c and beta2^c with this c
  // (Note [lazy regularisation correction] in gan/objective/objective.h).
  double lazy_ratio = 1.0;
};

struct GanSpec {
  NetworkFn generator_fn;
  NetworkFn discriminator_fn;
  Shape noise_shape;      // per example, e.g. (100,) or (100, 1, 1)
  int64_t num_classes = 0;  // > 0: class-conditional (labels go to G and D)
  // ACGAN's discriminator: forward(x) without labels returns (n, 1 + classes), the adversarial
  // logit and then the class logits (gan/step/network_calls.h).
  bool auxiliary_classifier = false;

  // The objective (Note [objective terms]): every part of both networks' losses, in the order
  // each network adds them (gan/objective/objective.h runs it).
  std::vector<TermPtr> terms;

  OptimizerFn generator_optimizer;
  OptimizerFn discriminator_optimizer;
  OptimizerSchedules generator_optimizer_schedules;
  OptimizerSchedules discriminator_optimizer_schedules;
  TrainSchedule schedule;
  GeneratorEma generator_ema;
  // Batch norm layers of both networks normalise with the statistics of the global batch,
  // summed over the replicas in forward and backward (nn/sync_batch_norm.h), so R replicas
  // follow one device. false: per-replica statistics (as TF and PyTorch by default).
  bool sync_batch_norm = false;
  // Multiplies both networks' losses before backward (f16 mixed precision needs it); every
  // replica keeps one scaler per network (gan/spec/loss_scaler.h).
  LossScaleConfig loss_scale;
  // Differentiable augmentation of every image D sees, real and fake, in D and G updates and in
  // the penalties (docs/augmentation.md); off when its policy is empty.
  augment::AugmentSpec augment;
  // Note [multi-level supervision] (gan/step/multi_level.h): the noise of each of the K levels a
  // multi-level generator returns in training (D takes K x C channels); empty: one level.
  std::vector<float> level_noise;
  // Gradient accumulation (train.micro_batches): every update runs each replica's shard as this
  // many equal micro-batches and reduces their summed gradients once (Note [micro-batches] in
  // gan/step/replica.h). The global batch must split into replicas x micro_batches equal parts.
  int micro_batches = 1;
  // Note [logged schedules]: every step adds the value each of these takes in it to its results'
  // statistics as "schedule/<path>" (metrics.jsonl, TensorBoard), so a run shows its scheduled
  // hyperparameters and a run without schedules logs what it always did. A run config lists
  // every schedule of its resolved config (nn::schedules_in: the loss's, the optimizers', the EMA's,
  // augment.p), under its key path: the value the key takes, before any lazy correction.
  std::vector<nn::NamedSchedule> logged_schedules;
};

}  // namespace gantry::gan
