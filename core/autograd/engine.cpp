// Backward execution. See engine.h for what runs; Note [backward order]: ready nodes run in
// decreasing sequence number (the reverse of creation order), which is a valid topological
// order and matches PyTorch's single-threaded engine, so summation orders are reproducible.
#include "core/autograd/engine.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/autograd/accumulate_grad.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops/ops.h"

namespace gantry::autograd {

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor g = grads[0];
  if (!GradMode::enabled()) g = g.detach();
  Tensor current(leaf_->grad);
  leaf_->grad = current.defined() ? ops::add(current, g).impl_ptr() : g.impl_ptr();
  return {};
}

class Engine {
 public:
  // When `targets` is non-empty, gradients arriving at those edges are captured and returned
  // instead of being accumulated into leaves.
  // on_ready (capture mode only) sees each captured gradient as soon as it is final.
  static TensorList run(const TensorList& outputs, const TensorList& grad_outputs,
                        const std::vector<Edge>& targets, bool retain_graph, bool create_graph,
                        const GradReadyFn& on_ready);
};

namespace {

struct NodeInfo {
  int dependencies = 0;
  bool executes = false;  // runs apply()
  TensorList buffer;      // incoming gradients, one per output slot
};

Tensor default_grad_output(const Tensor& out) {
  GANTRY_CHECK(out.numel() == 1, "backward: a gradient must be given for a non-scalar output of "
               "shape ", out.shape().str());
  NoGradGuard no_grad;
  return ops::ones(out.shape(), out.device());
}

}  // namespace

TensorList Engine::run(const TensorList& outputs, const TensorList& grad_outputs,
                       const std::vector<Edge>& targets, bool retain_graph, bool create_graph,
                       const GradReadyFn& on_ready) {
  GANTRY_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
               "backward: expected ", outputs.size(), " grad_outputs, found ",
               grad_outputs.size());
  const bool capture = !targets.empty();

  // Collect the graph reachable from the outputs.
  std::vector<Edge> roots;
  TensorList root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    GANTRY_CHECK(out.requires_grad(), "backward: output ", i,
                 " does not require grad and has no grad_fn");
    Tensor g = grad_outputs.empty() || !grad_outputs[i].defined() ? default_grad_output(out)
                                                                  : grad_outputs[i];
    GANTRY_CHECK(g.shape() == out.shape(), "backward: grad_output ", i, " has shape ",
                 g.shape().str(), ", expected ", out.shape().str());
    roots.push_back(gradient_edge(out));
    root_grads.push_back(g);
  }

  std::unordered_map<Node*, NodeInfo> info;
  std::vector<Node*> order;  // DFS post-order: children before parents
  {
    std::unordered_set<Node*> seen;
    std::vector<std::pair<Node*, size_t>> stack;
    for (const Edge& r : roots) {
      if (!seen.insert(r.node.get()).second) continue;
      stack.push_back({r.node.get(), 0});
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < node->next_edges().size()) {
          Node* child = node->next_edges()[next++].node.get();
          if (child && seen.insert(child).second) stack.push_back({child, 0});
        } else {
          order.push_back(node);
          stack.pop_back();
        }
      }
    }
  }

  // Which edges lead to something wanted.
  std::unordered_map<Node*, std::vector<int>> target_slots;
  for (size_t i = 0; i < targets.size(); ++i)
    target_slots[targets[i].node.get()].push_back(targets[i].input_nr);
  for (Node* node : order) {  // children first
    NodeInfo& ni = info[node];
    ni.buffer.resize(node->num_outputs());
    bool executes = false;
    node->needed_.assign(node->next_edges().size(), false);
    if (!capture && dynamic_cast<AccumulateGrad*>(node)) executes = true;
    for (size_t k = 0; k < node->next_edges().size(); ++k) {
      const Edge& e = node->next_edges()[k];
      if (!e.valid()) continue;
      bool wanted = info[e.node.get()].executes ||
                    (capture && target_slots.count(e.node.get()) &&
                     std::count(target_slots[e.node.get()].begin(),
                                target_slots[e.node.get()].end(), e.input_nr));
      node->needed_[k] = wanted;
      executes = executes || wanted;
    }
    ni.executes = executes;
  }
  for (Node* node : order) {
    if (!info[node].executes) continue;
    for (size_t k = 0; k < node->next_edges().size(); ++k)
      if (node->needed_[k]) info[node->next_edges()[k].node.get()].dependencies++;
  }

  std::vector<Tensor> captured(targets.size());
  auto deliver = [&](const Edge& e, const Tensor& g) {
    NodeInfo& ni = info[e.node.get()];
    Tensor& slot = ni.buffer[e.input_nr];
    slot = slot.defined() ? ops::add(slot, g) : g;
  };
  // A node leaves the ready queue once every gradient it will receive has arrived, so what it
  // holds for a target is final.
  auto collect_captures = [&](Node* node) {
    if (!capture) return;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].node.get() != node) continue;
      Tensor& g = captured[i];
      g = info[node].buffer[targets[i].input_nr];
      if (!g.defined()) continue;
      if (!create_graph) g = g.detach();
      if (on_ready) on_ready(i, g);
    }
  };

  auto later_first = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);

  GradModeGuard mode(create_graph);
  for (size_t i = 0; i < roots.size(); ++i) deliver(roots[i], root_grads[i]);
  {
    std::unordered_set<Node*> queued;
    for (const Edge& r : roots)
      if (info[r.node.get()].dependencies == 0 && queued.insert(r.node.get()).second)
        ready.push(r.node.get());
  }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    NodeInfo& ni = info[node];
    collect_captures(node);
    if (!ni.executes) continue;
    TensorList grads = std::move(ni.buffer);
    for (int i = 0; i < node->num_outputs(); ++i)
      if (!grads[i].defined()) grads[i] = ops::zeros(node->output_shape(i), node->output_device(i));
    TensorList input_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release_saved();
    for (size_t k = 0; k < node->next_edges().size(); ++k) {
      if (!node->needed_[k]) continue;
      const Edge& e = node->next_edges()[k];
      if (k < input_grads.size() && input_grads[k].defined()) deliver(e, input_grads[k]);
      if (--info[e.node.get()].dependencies == 0) ready.push(e.node.get());
    }
  }
  return captured;
}

TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs, bool retain_graph, bool create_graph,
                bool allow_unused, const GradReadyFn& on_ready) {
  GANTRY_CHECK(!inputs.empty(), "grad: expected at least one input");
  std::vector<Edge> targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    GANTRY_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad: input ", i,
                 " does not require grad");
    targets.push_back(gradient_edge(inputs[i]));
  }
  TensorList result = Engine::run(outputs, grad_outputs, targets, retain_graph || create_graph,
                                  create_graph, on_ready);
  for (size_t i = 0; i < result.size(); ++i)
    GANTRY_CHECK(result[i].defined() || allow_unused, "grad: input ", i, " (shape ",
                 inputs[i].shape().str(), ") was not used to compute the outputs; pass "
                 "allow_unused=true if that is expected");
  return result;
}

void backward(const TensorList& outputs, const TensorList& grad_outputs, bool retain_graph,
              bool create_graph) {
  Engine::run(outputs, grad_outputs, {}, retain_graph || create_graph, create_graph, {});
}

}  // namespace gantry::autograd
