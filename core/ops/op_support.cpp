#include "core/ops/op_support.h"

namespace gantry::ops::detail {

Device check_f32_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    GANTRY_CHECK(t->dtype() == DType::F32, op, ": expected f32 tensors, found ",
                 to_string(t->dtype()), " of shape ", t->shape().str());
    if (!first) {
      first = t;
      continue;
    }
    GANTRY_CHECK(t->device() == first->device(), op, ": expected all tensors on ",
                 first->device().str(), ", found one on ", t->device().str());
  }
  GANTRY_CHECK(first != nullptr, op, ": expected at least one defined tensor");
  return first->device();
}

void check_rank(const char* op, const char* what, const Tensor& t, int rank) {
  GANTRY_CHECK(t.dim() == rank, op, ": expected ", what, " of rank ", rank, ", found shape ",
               t.shape().str());
}

Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

GradList LambdaNode::apply(GradList&& grads) {
  GradList saved;
  saved.reserve(saved_.size());
  for (const SavedTensor& s : saved_) saved.push_back(unpack(s));
  return fn_(grads, saved, *this);
}

void LambdaNode::release_saved() {
  for (SavedTensor& s : saved_) s.release();
}

void record_not_twice_differentiable(const char* name, ArrayRef<Tensor*> outputs,
                                     ArrayRef<Tensor> inputs) {
  record(name, outputs, inputs, {},
         [name](const GradList&, const GradList&, const Node&) -> GradList {
           GANTRY_FAIL(name, ": double backward is not supported (the gradient of this gradient "
                       "cannot be computed); use an op without it, e.g. no batch norm in a "
                       "critic trained with a gradient penalty");
         });
}

}  // namespace gantry::ops::detail
