// Sequential container: children named "0", "1", ... applied in order, as torch.nn.Sequential.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class Sequential : public Cloneable<Sequential> {
 public:
  Sequential() : Cloneable("Sequential") {}
  explicit Sequential(std::vector<ModulePtr> modules);

  // Appends as child str(size()); returns the module for chaining.
  ModulePtr push_back(ModulePtr module);
  size_t size() const { return num_children(); }
  const ModulePtr& operator[](size_t i) const { return child(i); }

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

}  // namespace gantry::nn
