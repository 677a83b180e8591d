// A node of the backward graph: the backward of one forward op. Its apply() receives one
// gradient per forward output and returns one per forward input, computed with differentiable
// ops, so running it with recording on (create_graph) builds the graph of the gradient itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/array_ref.h"
#include "base/small_vector.h"
#include "core/autograd/saved_tensor.h"
#include "core/tensor.h"

namespace gantry::autograd {

class Node;

// Where a gradient goes: input slot `input_nr` of `node` (its output_nr in forward terms).
struct Edge {
  std::shared_ptr<Node> node;
  int input_nr = 0;
  bool valid() const { return node != nullptr; }
};

using TensorList = std::vector<Tensor>;
// The gradients a node receives and returns (and the saved tensors it unpacks): inline up to 5,
// so running a node needs no heap (training batch norm with a fused activation saves 5).
using GradList = SmallVector<Tensor, 5>;
using EdgeList = SmallVector<Edge, 4>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // grads[i] is the gradient of output i (always defined: the engine fills zeros).
  // Returns a list as long as next_edges(); entries whose input is not needed may be undefined.
  virtual GradList apply(GradList&& grads) = 0;
  // Frees saved tensors after backward unless the graph is retained.
  virtual void release_saved() {}

  const EdgeList& next_edges() const { return next_edges_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  Device output_device(int i) const { return output_devices_[i]; }

  // Whether the gradient for input i must be computed in the current backward pass: set by the
  // engine from what the caller asked for. Nodes skip the work for inputs not needed.
  bool needs_input_grad(int i) const {
    return i < static_cast<int>(needed_.size()) && needed_[i];
  }

 protected:
  Tensor unpack(const SavedTensor& s) { return s.unpack(shared_from_this()); }
  void add_output_meta(const Shape& shape, Device device) {
    output_shapes_.push_back(shape);
    output_devices_.push_back(device);
  }

 private:
  friend class Engine;
  friend void set_history(ArrayRef<Tensor*>, const std::shared_ptr<Node>&, ArrayRef<Tensor>);
  EdgeList next_edges_;
  SmallVector<Shape, 1> output_shapes_;
  SmallVector<Device, 1> output_devices_;
  SmallVector<bool, 4> needed_;
  uint64_t sequence_nr_;
  // The engine's bookkeeping for the backward pass that last reached this node (Note [engine
  // state in nodes], engine.cpp): kept here instead of in per-pass hash maps.
  uint64_t pass_ = 0;
  int dependencies_ = 0;
  bool executes_ = false;
  bool is_target_ = false;
  GradList buffer_;  // incoming gradients, one per output slot
};

// The sequence number the next node will get: every node recorded from now on has one at least
// as large (activation checkpointing tells its own nodes from older ones with it).
uint64_t next_sequence_nr();
// True when recording is on and any input requires grad.
bool any_requires_grad(ArrayRef<Tensor> inputs);
// The edge a gradient for `t` flows along (its grad_fn, or its leaf accumulator; invalid when
// t does not require grad).
Edge gradient_edge(const Tensor& t);
// Connects `node` to the inputs' edges and makes it the grad_fn of the outputs.
void set_history(ArrayRef<Tensor*> outputs, const std::shared_ptr<Node>& node,
                 ArrayRef<Tensor> inputs);

}  // namespace gantry::autograd
