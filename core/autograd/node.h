// A node of the backward graph: the backward of one forward op. Its apply() receives one
// gradient per forward output and returns one per forward input, computed with differentiable
// ops, so running it with recording on (create_graph) builds the graph of the gradient itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // grads[i] is the gradient of output i (always defined: the engine fills zeros).
  // Returns a list as long as next_edges(); entries whose input is not needed may be undefined.
  virtual TensorList apply(TensorList&& grads) = 0;
  // Frees saved tensors after backward unless the graph is retained.
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
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
  friend void set_history(const std::vector<Tensor*>&, const std::shared_ptr<Node>&,
                          const std::vector<Tensor>&);
  std::vector<Edge> next_edges_;
  std::vector<Shape> output_shapes_;
  std::vector<Device> output_devices_;
  std::vector<bool> needed_;
  uint64_t sequence_nr_;
};

// True when recording is on and any input requires grad.
bool any_requires_grad(const std::vector<Tensor>& inputs);
// The edge a gradient for `t` flows along (its grad_fn, or its leaf accumulator; invalid when
// t does not require grad).
Edge gradient_edge(const Tensor& t);
// Connects `node` to the inputs' edges and makes it the grad_fn of the outputs.
void set_history(const std::vector<Tensor*>& outputs, const std::shared_ptr<Node>& node,
                 const std::vector<Tensor>& inputs);

}  // namespace gantry::autograd
