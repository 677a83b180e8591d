// Backward execution. See engine.h for what runs; Note [backward order]: ready nodes run in
// decreasing sequence number (the reverse of creation order), which is a valid topological
// order and matches PyTorch's single-threaded engine, so summation orders are reproducible.
//
// Note [engine state in nodes]: a pass keeps its per-node bookkeeping (dependency count,
// whether the node runs, incoming gradients) in the nodes themselves, marked with the pass's
// number, and its lists in thread-local scratch that keeps its capacity, so a steady-state
// backward pass makes no heap allocation of its own. A graph is run by one pass at a time.
#include "core/autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "core/autograd/accumulate_grad.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops/ops.h"

namespace gantry::autograd {

GradList AccumulateGrad::apply(GradList&& grads) {
  Tensor g = grads[0];
  if (!GradMode::enabled()) g = g.detach();
  Tensor current(leaf_->grad);
  leaf_->grad = current.defined() ? ops::add(current, g).impl_ptr() : g.impl_ptr();
  return {};
}

namespace {
// The lists of one pass. One per nesting depth (a node's backward could run a pass of its
// own), reused by the thread's later passes.
struct Scratch {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  std::vector<Edge> targets;
  std::vector<Node*> order;  // DFS post-order: children before parents
  std::vector<std::pair<Node*, size_t>> stack;
  std::vector<Node*> ready;  // a heap, latest sequence number first
};

}  // namespace

class Engine {
 public:
  // When `inputs` is non-empty, gradients arriving at their edges are captured and returned
  // instead of being accumulated into leaves.
  // on_ready (capture mode only) sees each captured gradient as soon as it is final.
  // The captured gradients go to `captured` (resized to inputs.size()).
  static void run(ArrayRef<Tensor> outputs, ArrayRef<Tensor> grad_outputs,
                  ArrayRef<Tensor> inputs, bool retain_graph, bool create_graph,
                  const GradReadyFn& on_ready, TensorList& captured);
  // Drops every gradient and node reference a pass still holds, keeping the lists' capacity.
  static void end_pass(Scratch& s);
};

namespace {

thread_local std::vector<std::unique_ptr<Scratch>> t_scratch;
thread_local size_t t_depth = 0;
std::atomic<uint64_t> next_pass{1};
std::atomic<uint64_t> graph_recording_passes{0};  // graph_recording_backwards()

Tensor default_grad_output(const Tensor& out) {
  GANTRY_CHECK(out.numel() == 1, "backward: a gradient must be given for a non-scalar output of "
               "shape ", out.shape().str());
  NoGradGuard no_grad;
  return ops::ones(out.shape(), out.device());
}

bool later_first(const Node* a, const Node* b) { return a->sequence_nr() < b->sequence_nr(); }

}  // namespace

void Engine::end_pass(Scratch& s) {
  for (Node* node : s.order) node->buffer_.clear();
  s.order.clear();
  s.stack.clear();
  s.ready.clear();
  s.root_grads.clear();
  s.targets.clear();
  s.roots.clear();
}

// Takes this depth's scratch, and ends its pass on exit (also by exception).
class ScratchLease {
 public:
  ScratchLease() {
    if (t_scratch.size() <= t_depth) t_scratch.push_back(std::make_unique<Scratch>());
    s_ = t_scratch[t_depth++].get();
  }
  ~ScratchLease() {
    Engine::end_pass(*s_);
    --t_depth;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() { return *s_; }

 private:
  Scratch* s_;
};

void Engine::run(ArrayRef<Tensor> outputs, ArrayRef<Tensor> grad_outputs,
                 ArrayRef<Tensor> inputs, bool retain_graph, bool create_graph,
                 const GradReadyFn& on_ready, TensorList& captured) {
  GANTRY_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
               "backward: expected ", outputs.size(), " grad_outputs, found ",
               grad_outputs.size());
  ScratchLease lease;
  Scratch& s = *lease;
  const uint64_t pass = next_pass.fetch_add(1, std::memory_order_relaxed);
  if (create_graph) graph_recording_passes.fetch_add(1, std::memory_order_relaxed);
  const bool capture = !inputs.empty();
  for (const Tensor& input : inputs) s.targets.push_back(gradient_edge(input));

  // Collect the graph reachable from the outputs.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    GANTRY_CHECK(out.requires_grad(), "backward: output ", i,
                 " does not require grad and has no grad_fn");
    Tensor g = grad_outputs.empty() || !grad_outputs[i].defined() ? default_grad_output(out)
                                                                  : grad_outputs[i];
    GANTRY_CHECK(g.shape() == out.shape(), "backward: grad_output ", i, " has shape ",
                 g.shape().str(), ", expected ", out.shape().str());
    s.roots.push_back(gradient_edge(out));
    s.root_grads.push_back(std::move(g));
  }

  // First visit in this pass: reset the node's bookkeeping.
  auto first_visit = [&](Node* node) {
    if (node->pass_ == pass) return false;
    node->pass_ = pass;
    node->dependencies_ = 0;
    node->executes_ = false;
    node->is_target_ = false;
    node->buffer_.clear();
    return true;
  };
  for (const Edge& r : s.roots) {
    if (!first_visit(r.node.get())) continue;
    s.stack.push_back({r.node.get(), 0});
    while (!s.stack.empty()) {
      auto& [node, next] = s.stack.back();
      if (next < node->next_edges().size()) {
        Node* child = node->next_edges()[next++].node.get();
        if (child && first_visit(child)) s.stack.push_back({child, 0});
      } else {
        s.order.push_back(node);
        s.stack.pop_back();
      }
    }
  }

  // Which edges lead to something wanted.
  for (const Edge& t : s.targets)
    if (t.node->pass_ == pass) t.node->is_target_ = true;
  auto is_target = [&](const Edge& e) {
    if (!capture || !e.node->is_target_) return false;
    for (const Edge& t : s.targets)
      if (t.node == e.node && t.input_nr == e.input_nr) return true;
    return false;
  };
  for (Node* node : s.order) {  // children first
    node->buffer_.resize(node->num_outputs());
    bool executes = !capture && dynamic_cast<AccumulateGrad*>(node);
    node->needed_.assign(node->next_edges().size(), false);
    for (size_t k = 0; k < node->next_edges().size(); ++k) {
      const Edge& e = node->next_edges()[k];
      if (!e.valid()) continue;
      const bool wanted = e.node->executes_ || is_target(e);
      node->needed_[k] = wanted;
      executes = executes || wanted;
    }
    node->executes_ = executes;
  }
  for (Node* node : s.order) {
    if (!node->executes_) continue;
    for (size_t k = 0; k < node->next_edges().size(); ++k)
      if (node->needed_[k]) node->next_edges()[k].node->dependencies_++;
  }

  captured.assign(s.targets.size(), Tensor());
  auto deliver = [](const Edge& e, const Tensor& g) {
    Tensor& slot = e.node->buffer_[e.input_nr];
    slot = slot.defined() ? ops::add(slot, g) : g;
  };
  // A node leaves the ready queue once every gradient it will receive has arrived, so what it
  // holds for a target is final.
  auto collect_captures = [&](Node* node) {
    if (!capture || !node->is_target_) return;
    for (size_t i = 0; i < s.targets.size(); ++i) {
      if (s.targets[i].node.get() != node) continue;
      Tensor& g = captured[i];
      g = node->buffer_[s.targets[i].input_nr];
      if (!g.defined()) continue;
      if (!create_graph) g = g.detach();
      if (on_ready) on_ready(i, g);
    }
  };
  auto push_ready = [&](Node* node) {
    s.ready.push_back(node);
    std::push_heap(s.ready.begin(), s.ready.end(), later_first);
  };

  GradModeGuard mode(create_graph);
  for (size_t i = 0; i < s.roots.size(); ++i) deliver(s.roots[i], s.root_grads[i]);
  for (size_t i = 0; i < s.roots.size(); ++i) {
    Node* root = s.roots[i].node.get();
    bool queued = false;  // a node that is the root of several outputs is queued once
    for (size_t j = 0; j < i; ++j) queued = queued || s.roots[j].node.get() == root;
    if (!queued && root->dependencies_ == 0) push_ready(root);
  }

  while (!s.ready.empty()) {
    std::pop_heap(s.ready.begin(), s.ready.end(), later_first);
    Node* node = s.ready.back();
    s.ready.pop_back();
    collect_captures(node);
    if (!node->executes_) continue;
    GradList grads = std::move(node->buffer_);
    for (int i = 0; i < node->num_outputs(); ++i)
      if (!grads[i].defined()) grads[i] = ops::zeros(node->output_shape(i), node->output_device(i));
    GradList input_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release_saved();
    for (size_t k = 0; k < node->next_edges().size(); ++k) {
      if (!node->needed_[k]) continue;
      const Edge& e = node->next_edges()[k];
      if (k < input_grads.size() && input_grads[k].defined()) deliver(e, input_grads[k]);
      if (--e.node->dependencies_ == 0) push_ready(e.node.get());
    }
  }
}

uint64_t graph_recording_backwards() { return graph_recording_passes.load(std::memory_order_relaxed); }

void grad_into(TensorList& result, ArrayRef<Tensor> outputs, ArrayRef<Tensor> inputs,
               ArrayRef<Tensor> grad_outputs, bool retain_graph, bool create_graph,
               bool allow_unused, const GradReadyFn& on_ready) {
  GANTRY_CHECK(!inputs.empty(), "grad: expected at least one input");
  for (size_t i = 0; i < inputs.size(); ++i)
    GANTRY_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad: input ", i,
                 " does not require grad");
  Engine::run(outputs, grad_outputs, inputs, retain_graph || create_graph, create_graph, on_ready,
              result);
  for (size_t i = 0; i < result.size(); ++i)
    GANTRY_CHECK(result[i].defined() || allow_unused, "grad: input ", i, " (shape ",
                 inputs[i].shape().str(), ") was not used to compute the outputs; pass "
                 "allow_unused=true if that is expected");
}

TensorList grad(ArrayRef<Tensor> outputs, ArrayRef<Tensor> inputs, ArrayRef<Tensor> grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused,
                const GradReadyFn& on_ready) {
  TensorList result;
  grad_into(result, outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
            on_ready);
  return result;
}

void backward(ArrayRef<Tensor> outputs, ArrayRef<Tensor> grad_outputs, bool retain_graph,
              bool create_graph) {
  TensorList none;  // nothing is captured: stays empty, no allocation
  Engine::run(outputs, grad_outputs, {}, retain_graph || create_graph, create_graph, {}, none);
}

}  // namespace gantry::autograd
