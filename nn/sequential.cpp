#include "nn/sequential.h"

namespace gantry::nn {

Sequential::Sequential(std::vector<ModulePtr> modules) : Cloneable("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}

ModulePtr Sequential::push_back(ModulePtr module) {
  return register_module(std::to_string(num_children()), std::move(module));
}

Tensor Sequential::forward_impl(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, m] : named_children()) y = m->forward(y);
  return y;
}

}  // namespace gantry::nn
