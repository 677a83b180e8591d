#include "nn/activation_checkpoint.h"

#include <string>
#include <utility>

#include "base/error.h"
#include "core/ops/activation_checkpoint.h"

namespace gantry::nn {

namespace {

struct ParameterSlot {
  Module* owner;
  std::string name;
};

// Puts `replacements` into the slots for its lifetime (also when the forward throws).
class ParameterSwap {
 public:
  ParameterSwap(const std::vector<ParameterSlot>& slots, const std::vector<Tensor>& replacements) : slots_(slots) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      originals_.push_back(slots_[i].owner->get(slots_[i].name));
      slots_[i].owner->set(slots_[i].name, replacements[i]);
    }
  }
  ~ParameterSwap() {
    for (size_t i = 0; i < originals_.size(); ++i) slots_[i].owner->set(slots_[i].name, originals_[i]);
  }
  ParameterSwap(const ParameterSwap&) = delete;
  ParameterSwap& operator=(const ParameterSwap&) = delete;

 private:
  const std::vector<ParameterSlot>& slots_;
  std::vector<Tensor> originals_;
};

}  // namespace

std::vector<Tensor> checkpointed(Module& module, const std::vector<Tensor>& inputs, const ModuleForward& forward) {
  std::vector<ParameterSlot> slots;
  std::vector<Tensor> params;
  for (auto& [path, m] : module.named_modules())
    for (auto& [name, t] : m->named_parameters(/*recurse=*/false)) {
      slots.push_back({m, name});
      params.push_back(t);
    }
  const NamedTensors buffers = module.named_buffers();
  std::vector<uint64_t> versions;
  for (const auto& [name, b] : buffers) versions.push_back(b.version());

  ops::CheckpointBlock block = [slots, forward](const std::vector<Tensor>& in, const std::vector<Tensor>& p) {
    bool own = true;  // the first run computes with the module's own parameters
    for (size_t i = 0; i < p.size() && own; ++i) own = p[i].impl_ptr() == slots[i].owner->get(slots[i].name).impl_ptr();
    if (own) return forward(in);
    ParameterSwap swap(slots, p);
    return forward(in);
  };
  std::vector<Tensor> outputs = ops::activation_checkpoint(block, inputs, params);
  for (size_t i = 0; i < buffers.size(); ++i)
    GANTRY_CHECK(buffers[i].second.version() == versions[i], "activation checkpointing: the forward of ",
                 module.type_name(), " wrote its buffer `", buffers[i].first,
                 "` (running statistics?); recomputing it in backward would write it again: a checkpointed "
                 "block must not update state in its forward");
  return outputs;
}

Tensor checkpointed(Module& module, const Tensor& x) {
  return checkpointed(module, {x}, [&module](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{module.forward(in[0])};
  })[0];
}

}  // namespace gantry::nn
