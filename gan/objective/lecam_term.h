// LeCam regularisation (Tseng, Jiang, Liu, Yang and Yang, "Regularizing Generative Adversarial
// Networks under Limited Data", CVPR 2021): a term of D,
//   weight * (mean relu(D(x) - alpha_F)^2 + mean relu(alpha_R - D(G(z)))^2),
// each mean a sum over the examples over the global batch, named "lecam_penalty". alpha_R and
// alpha_F are anchors: exponential moving averages of D's mean adversarial logit on the reals and
// on the fakes, moved once per D update (per micro-batch) before the penalty is taken, with
// alpha <- decay * alpha + (1 - decay) * mean, and decay 0 before `start_step` (so the anchors
// start at the batch means). This is the authors' code (google/lecam-gan), whose relu keeps only
// the side of each anchor the adversarial loss pushes away from; the paper's equation writes the
// squared distance without it. Defaults are PyTorch-StudioGAN's CIFAR-10 LeCam settings.
//
// Note [LeCam anchors]: the anchors are term state (Note [term state]) and must be equal on every
// replica: the batch means are means over the global (micro-)batch, formed by one all-reduce of
// [sum D(x), sum D(G(z)), examples] from every replica, even one with an empty shard, so the term
// joins that collective. They stay on the device (no host read per update) and are saved in
// checkpoints, so a resumed run continues them exactly. The logits are D's outputs for the
// adversarial loss (the images as the training augmentation left them).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "gan/spec/objective_term.h"

namespace gantry::gan {

struct LeCamSettings {
  double weight = 0.3;       // >= 0
  double decay = 0.99;       // in [0, 1)
  int64_t start_step = 1000;  // global step from which the anchors average (decay 0 before)
};

// The anchors after an update at `step`: `anchors` (alpha_R, alpha_F) moved towards `means`
// (the global batch's mean real and fake logits); both (2,) tensors on one device.
Tensor updated_lecam_anchors(const Tensor& anchors, const Tensor& means, const LeCamSettings& settings, int64_t step);
// weight * (sum relu(real_logits - alpha_F)^2 + sum relu(alpha_R - fake_logits)^2) / denominator.
Tensor lecam_penalty(const Tensor& real_logits, const Tensor& fake_logits, const Tensor& anchors, float weight,
                     float denominator);

TermPtr make_lecam_term(const LeCamSettings& settings);

}  // namespace gantry::gan
