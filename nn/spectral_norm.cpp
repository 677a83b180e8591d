#include "nn/spectral_norm.h"

#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

namespace {

// x / max(||x||, eps), as torch.nn.functional.normalize on a vector.
Tensor normalize(const Tensor& x, float eps) {
  Tensor norm = ops::sqrt(ops::sum(ops::square(x)));
  return ops::div(x, ops::clamp(norm, eps, std::numeric_limits<float>::infinity()));
}

// W with `dim` moved to the front, as a matrix (h, rest).
Tensor weight_matrix(const Tensor& w, int dim) {
  Tensor moved = w;
  if (dim != 0) {
    std::vector<int> order{dim};
    for (int d = 0; d < w.dim(); ++d)
      if (d != dim) order.push_back(d);
    moved = ops::permute(w, order);
  }
  return ops::reshape(moved, {moved.size(0), moved.numel() / moved.size(0)});
}

class SpectralNormHook final : public ForwardPreHook {
 public:
  SpectralNormHook(std::string name, int iterations, double eps, int dim)
      : name_(std::move(name)), iterations_(iterations), eps_(static_cast<float>(eps)), dim_(dim) {}

  void before_forward(Module& m) override {
    const Tensor& w = m.get(name_ + "_orig");
    Tensor u = m.get(name_ + "_u"), v = m.get(name_ + "_v");
    if (m.is_training() && iterations_ > 0) {
      NoGradGuard no_grad;
      Tensor mat = weight_matrix(w.detach(), dim_);  // (h, w)
      for (int i = 0; i < iterations_; ++i) {
        v = normalize(ops::reshape(ops::matmul(mat, ops::reshape(u, {u.numel(), 1}), true), {v.numel()}), eps_);
        u = normalize(ops::reshape(ops::matmul(mat, ops::reshape(v, {v.numel(), 1})), {u.numel()}), eps_);
      }
      // The buffers are written in place; the fresh u, v (not the buffers) enter the graph,
      // so the next forward's update cannot invalidate this one's backward.
      ops::copy_(m.get(name_ + "_u"), u);
      ops::copy_(m.get(name_ + "_v"), v);
    } else {
      u = u.detach();
      v = v.detach();
    }
    Tensor mat = weight_matrix(w, dim_);
    Tensor sigma = ops::sum(ops::mul(u, ops::reshape(ops::matmul(mat, ops::reshape(v, {v.numel(), 1})),
                                                     {u.numel()})));
    m.set(name_, ops::div(w, sigma));
  }

 private:
  std::string name_;
  int iterations_;
  float eps_;
  int dim_;
};

}  // namespace

ModulePtr spectral_norm(ModulePtr module, const std::string& name, SpectralNormOptions o,
                        RngKey key) {
  GANTRY_CHECK(module != nullptr, "spectral_norm: module is null");
  const std::string& type = module->type_name();
  GANTRY_CHECK(!module->has(name + "_orig"), "spectral_norm: ", type, ".", name,
               " is already spectrally normalised");
  GANTRY_CHECK(module->has(name) && module->kind_of(name) == Module::SlotKind::Parameter,
               "spectral_norm: ", type, " has no parameter '", name, "'");
  GANTRY_CHECK(o.n_power_iterations >= 0, "spectral_norm: expected n_power_iterations >= 0, found ",
               o.n_power_iterations);
  GANTRY_CHECK(o.eps > 0, "spectral_norm: expected eps > 0, found ", o.eps);
  Tensor w = module->get(name);
  int dim = o.dim >= 0 ? o.dim : (type == "ConvTranspose2d" ? 1 : 0);
  GANTRY_CHECK(dim < w.dim(), "spectral_norm: dim ", dim, " out of range for ", type, ".", name,
               " of shape ", w.shape().str());
  Tensor mat = weight_matrix(w.detach(), dim);
  const int64_t h = mat.size(0), width = mat.size(1);

  // PyTorch's order: drop `name`, append `name_orig` (so it follows the bias), then the buffers.
  module->remove(name);
  module->register_parameter(name + "_orig", w);
  Tensor u = ops::empty({h}, w.device()), v = ops::empty({width}, w.device());
  init::normal_(u, 0.0, 1.0, init::key_for(key, name + "_u"));
  init::normal_(v, 0.0, 1.0, init::key_for(key, name + "_v"));
  {
    NoGradGuard no_grad;
    float eps = static_cast<float>(o.eps);
    module->register_buffer(name + "_u", normalize(u, eps));
    module->register_buffer(name + "_v", normalize(v, eps));
  }
  module->register_attribute(name, w.detach());
  module->add_pre_hook(std::make_shared<SpectralNormHook>(name, o.n_power_iterations, o.eps, dim));
  return module;
}

}  // namespace gantry::nn
