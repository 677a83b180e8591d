#include "core/ops/activation_checkpoint.h"

#include <unordered_set>

#include "core/autograd/engine.h"
#include "core/ops/op_support.h"

namespace gantry::ops {

namespace {

// Throws when the graph of `outputs` reaches a node created before `first_new`, i.e. a node of
// the outer graph (Note [activation checkpointing]).
void check_private_graph(const std::vector<Tensor>& outputs, uint64_t first_new) {
  std::vector<const autograd::Node*> stack;
  std::unordered_set<const autograd::Node*> seen;
  for (const Tensor& out : outputs)
    if (out.defined() && out.impl().grad_fn) stack.push_back(out.impl().grad_fn.get());
  while (!stack.empty()) {
    const autograd::Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    GANTRY_CHECK(node->sequence_nr() >= first_new, "activation_checkpoint: the recomputed block reached ",
                 node->name(), ", a node recorded before it: the block reads a tensor with history that is "
                 "not among its inputs or parameters; pass it in `inputs`");
    for (const autograd::Edge& e : node->next_edges())
      if (e.valid()) stack.push_back(e.node.get());
  }
}

}  // namespace

std::vector<Tensor> activation_checkpoint(const CheckpointBlock& block, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& params) {
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), params.begin(), params.end());
  if (!autograd::any_requires_grad(all)) return block(inputs, params);
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = block(inputs, params);
  }
  std::vector<Tensor*> outs;
  for (Tensor& out : outputs) {
    GANTRY_CHECK(out.defined(), "activation_checkpoint: the block returned an undefined output");
    for (const Tensor& t : all)  // an input returned as it is must not get this node as its history
      if (t.defined() && t.impl_ptr() == out.impl_ptr()) out = out.detach();
    outs.push_back(&out);
  }
  std::vector<detail::Save> saves;
  for (const Tensor& t : all) saves.push_back({t, false});
  const size_t num_inputs = inputs.size();
  detail::record("ActivationCheckpointBackward", outs, all, saves,
                 [block, num_inputs](const GradList& grads, const GradList& saved, const autograd::Node& node) {
                   GANTRY_CHECK(!autograd::GradMode::enabled(), "activation_checkpoint: the backward of a "
                                "checkpointed block cannot be differentiated again (create_graph); turn "
                                "activation checkpointing off for a network under an exact gradient penalty, "
                                "or use the approximate one");
                   // Fresh leaves, so the recomputed graph is private (Note [activation checkpointing]).
                   std::vector<Tensor> leaves, wanted;
                   std::vector<size_t> wanted_index;
                   for (size_t i = 0; i < saved.size(); ++i) {
                     leaves.push_back(saved[i].defined() ? saved[i].detach() : Tensor());
                     if (!node.needs_input_grad(static_cast<int>(i))) continue;
                     leaves.back().set_requires_grad(true);
                     wanted.push_back(leaves.back());
                     wanted_index.push_back(i);
                   }
                   GradList result(saved.size());
                   if (wanted.empty()) return result;
                   const uint64_t first_new = autograd::next_sequence_nr();
                   std::vector<Tensor> recomputed;
                   {
                     autograd::GradModeGuard recording(true);
                     recomputed = block(std::vector<Tensor>(leaves.begin(), leaves.begin() + num_inputs),
                                        std::vector<Tensor>(leaves.begin() + num_inputs, leaves.end()));
                   }
                   GANTRY_CHECK(recomputed.size() == grads.size(), "activation_checkpoint: the block returned ",
                                recomputed.size(), " outputs when recomputed, ", grads.size(), " the first time");
                   check_private_graph(recomputed, first_new);
                   std::vector<Tensor> roots, root_grads;
                   for (size_t j = 0; j < recomputed.size(); ++j) {
                     if (!recomputed[j].requires_grad()) continue;
                     roots.push_back(recomputed[j]);
                     root_grads.push_back(grads[j]);
                   }
                   if (roots.empty()) return result;
                   std::vector<Tensor> g = autograd::grad(roots, wanted, root_grads, /*retain_graph=*/false,
                                                          /*create_graph=*/false, /*allow_unused=*/true);
                   for (size_t k = 0; k < g.size(); ++k) result[wanted_index[k]] = g[k];
                   return result;
                 });
  return outputs;
}

}  // namespace gantry::ops
