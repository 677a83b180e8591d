#include "gan/discriminator_calls.h"

namespace gantry::gan {

Tensor run_discriminator(const GanSpec& spec, nn::Module& d, const Tensor& images, const Tensor& labels) {
  return spec.num_classes > 0 && spec.auxiliary_classification_weight == 0.f ? d.forward(images, labels)
                                                                            : d.forward(images);
}

Tensor adversarial_logits(const GanSpec& spec, const Tensor& out) {
  if (spec.auxiliary_classification_weight == 0.f) return out;
  return ops::slice(out, 1, 0, 1);
}

Tensor class_logits(const Tensor& out) { return ops::slice(out, 1, 1, out.size(1)); }

}  // namespace gantry::gan
