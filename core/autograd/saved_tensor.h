// A tensor saved by a node for its backward. Saving an op's own output would make a cycle
// (output -> grad_fn -> output), so outputs are stored without history and re-attached to the
// node when unpacked. The storage version is recorded, so an in-place write between forward
// and backward is an error rather than a wrong gradient.
#pragma once

#include <memory>

#include "core/tensor.h"

namespace gantry::autograd {

class Node;

class SavedTensor {
 public:
  SavedTensor() = default;
  // `is_output`: the tensor is an output of the node that saves it.
  SavedTensor(const Tensor& t, bool is_output);

  // Returns the saved tensor with its history; `owner` is the node doing the unpacking.
  // Throws when released or modified in place since it was saved.
  Tensor unpack(const std::shared_ptr<Node>& owner) const;
  void release();
  bool defined() const { return defined_; }

 private:
  bool defined_ = false;
  bool is_output_ = false;
  bool released_ = false;
  Tensor data_;  // for inputs: the tensor itself; for outputs: a history-free alias
  bool requires_grad_ = false;
  int output_nr_ = 0;
  uint64_t version_ = 0;
};

}  // namespace gantry::autograd
