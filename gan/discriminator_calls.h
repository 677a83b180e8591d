// How the estimator calls a GanSpec's discriminator: conditional critics take the labels, and an
// ACGAN discriminator returns (n, 1 + classes), the adversarial logit and then the class logits.
#pragma once

#include "gan/gan_spec.h"

namespace gantry::gan {

Tensor run_discriminator(const GanSpec& spec, nn::Module& d, const Tensor& images, const Tensor& labels);
// The adversarial logits of D's output (its first column with ACGAN).
Tensor adversarial_logits(const GanSpec& spec, const Tensor& out);
// ACGAN's class logits: every column after the first.
Tensor class_logits(const Tensor& out);

}  // namespace gantry::gan
