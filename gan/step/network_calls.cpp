#include "gan/step/network_calls.h"

#include "core/ops/ops.h"

namespace gantry::gan {

Tensor run_generator(const GanSpec& spec, nn::Module& g, const Tensor& noise, const Tensor& labels) {
  return spec.num_classes > 0 ? g.forward(noise, labels) : g.forward(noise);
}

Tensor run_discriminator(const GanSpec& spec, nn::Module& d, const Tensor& images, const Tensor& labels) {
  return spec.num_classes > 0 && !spec.auxiliary_classifier ? d.forward(images, labels) : d.forward(images);
}

Tensor adversarial_logits(const GanSpec& spec, const Tensor& out) {
  if (!spec.auxiliary_classifier) return out;
  return ops::slice(out, 1, 0, 1);
}

Tensor class_logits(const Tensor& out) { return ops::slice(out, 1, 1, out.size(1)); }

}  // namespace gantry::gan
