// How the estimator calls a GanSpec's networks: the one place that knows which call takes labels.
// A class-conditional generator takes the labels to draw; a conditional critic takes the labels,
// and an ACGAN discriminator does not but returns (n, 1 + classes), the adversarial logit and then
// the class logits.
#pragma once

#include "gan/spec/gan_spec.h"

namespace gantry::gan {

// G(noise[, labels]) (labels when spec.num_classes > 0).
Tensor run_generator(const GanSpec& spec, nn::Module& g, const Tensor& noise, const Tensor& labels);
// D(images[, labels]) (labels when conditional without an auxiliary classifier).
Tensor run_discriminator(const GanSpec& spec, nn::Module& d, const Tensor& images, const Tensor& labels);
// The adversarial logits of D's output (its first column with ACGAN).
Tensor adversarial_logits(const GanSpec& spec, const Tensor& out);
// ACGAN's class logits: every column after the first.
Tensor class_logits(const Tensor& out);

}  // namespace gantry::gan
