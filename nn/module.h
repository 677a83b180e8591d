// Module: a tree of named parameters, buffers and child modules, in PyTorch's layout and
// naming, so a state saved here loads into the equivalent torch.nn module and back.
//
// Note [module registry]: every tensor and child a module uses lives in its registry (slots_
// and children_), never in a subclass member, and a subclass reads them by name (get(),
// child()). That is what makes clone() and to() correct for every subclass without per-class
// code, and what lets spectral_norm() swap a `weight` parameter for a computed tensor.
//
// Iteration order is PyTorch's: per module, its own entries in registration order, then each
// child depth first (named_parameters, named_buffers, state_dict = parameters then buffers
// per module).
//
// Note [module randomness]: training-time randomness (dropout) comes from set_rng(key,
// first_example): each module draws from its own stream, stream_id(key.stream, its depth-first
// index), starting at element first_example × (elements per example). Passing the global
// index of the shard's first example makes the masks independent of how the batch is split
// over replicas.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/device.h"
#include "base/philox.h"
#include "core/tensor.h"

namespace gantry::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Runs before every forward; spectral normalisation is one.
class ForwardPreHook {
 public:
  virtual ~ForwardPreHook() = default;
  virtual void before_forward(Module& module) = 0;
};

class Module {
 public:
  enum class SlotKind : uint8_t {
    Parameter,  // a leaf that requires grad; in the state dict
    Buffer,     // state without gradient (running statistics); in the state dict
    Attribute,  // a computed tensor (e.g. the normalised weight); not in the state dict
  };

  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module& operator=(const Module&) = delete;

  // Runs the pre-hooks, then forward_impl.
  Tensor forward(const Tensor& x);
  // Runs only the pre-hooks (e.g. spectral norm's, which sets `weight`), for a caller that
  // computes with the module's tensors itself instead of calling forward.
  void run_pre_hooks() {
    for (auto& hook : hooks_) hook->before_forward(*this);
  }
  // Conditional networks: input and labels (i64). Modules that take no labels throw.
  Tensor forward(const Tensor& x, const Tensor& labels);
  Tensor operator()(const Tensor& x) { return forward(x); }
  Tensor operator()(const Tensor& x, const Tensor& labels) { return forward(x, labels); }

  // "Linear", "Conv2d", ... as PyTorch's class names (initialisers dispatch on it).
  const std::string& type_name() const { return type_name_; }

  // ---- iteration (dotted names, PyTorch order)
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  // Parameters then buffers of each module, depth first: PyTorch's state_dict() keys.
  NamedTensors state_dict() const;
  const std::vector<std::pair<std::string, ModulePtr>>& named_children() const {
    return children_;
  }
  // This module ("") and every descendant, depth first, with their dotted paths.
  std::vector<std::pair<std::string, Module*>> named_modules();
  int64_t num_parameters() const;

  // ---- own registry
  // Names are string_views, so a literal longer than the small-string buffer costs no heap.
  bool has(std::string_view name) const;
  // The tensor registered as `name` in this module (any kind); throws naming the module.
  const Tensor& get(std::string_view name) const;
  // Replaces the tensor of an existing slot (same kind); used by hooks and initialisers.
  void set(const std::string& name, Tensor t);
  SlotKind kind_of(const std::string& name) const;
  const ModulePtr& child(const std::string& name) const;
  const ModulePtr& child(size_t index) const;
  size_t num_children() const { return children_.size(); }

  // ---- mode and placement
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves every parameter and buffer (new leaves; gradients dropped). Optimizers hold the old
  // handles, so move a module before creating its optimizer.
  void to(Device device);
  // Device of the first parameter or buffer (cpu:0 for a module without state).
  Device device() const;
  // Deep copy: new storage for every tensor (on `device` if given), same mode and hooks.
  // Gradients are not copied. Mirrored strategies replicate modules this way.
  ModulePtr clone(std::optional<Device> device = std::nullopt) const;
  // Sets every parameter's gradient to undefined.
  void zero_grad();
  // Note [module randomness].
  void set_rng(RngKey key, uint64_t first_example = 0);

  // ---- registration (public so free functions such as spectral_norm can rewire a module)
  const Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  const Tensor& register_buffer(const std::string& name, Tensor t);
  const Tensor& register_attribute(const std::string& name, Tensor t);
  ModulePtr register_module(const std::string& name, ModulePtr module);
  // Removes a slot (PyTorch's `del module._parameters[name]`).
  void remove(const std::string& name);
  void add_pre_hook(std::shared_ptr<ForwardPreHook> hook) { hooks_.push_back(std::move(hook)); }
  bool has_pre_hooks() const { return !hooks_.empty(); }

  // Re-draws this module's own parameters with its PyTorch default initialisation (not the
  // children's; init::apply walks the tree). A module without parameters does nothing.
  virtual void reset_parameters(RngKey key) {}

  // Human-readable tree: "Sequential(\n  (0): Linear(in=4, out=8)\n ...".
  std::string str() const;
  virtual std::string extra_repr() const { return ""; }

 protected:
  Module(const Module&) = default;  // shallow: clone() deep-copies afterwards
  virtual Tensor forward_impl(const Tensor& x) = 0;
  virtual Tensor forward_impl(const Tensor& x, const Tensor& labels);
  // A shallow copy of the concrete module (its copy constructor); see Cloneable.
  virtual ModulePtr shallow_copy() const = 0;

  const RngKey& rng_key() const { return rng_key_; }
  uint64_t rng_first_example() const { return rng_first_example_; }

 private:
  struct Slot {
    std::string name;
    SlotKind kind;
    Tensor tensor;
  };
  const Slot* find(std::string_view name) const;
  Slot* find(std::string_view name);
  void collect(const std::string& prefix, bool recurse, bool params, bool buffers,
               NamedTensors& out) const;
  void set_rng_impl(RngKey key, uint64_t first_example, uint64_t& index);
  void str_impl(std::string& out, int indent) const;
  void check_new_name(const std::string& name) const;

  std::string type_name_;
  std::vector<Slot> slots_;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  std::vector<std::shared_ptr<ForwardPreHook>> hooks_;  // stateless, shared between clones
  bool training_ = true;
  RngKey rng_key_{};
  uint64_t rng_first_example_ = 0;
};

// CRTP helper giving a module its shallow_copy().
template <typename Derived>
class Cloneable : public Module {
 public:
  using Module::Module;

 protected:
  ModulePtr shallow_copy() const override {
    return std::shared_ptr<Derived>(new Derived(static_cast<const Derived&>(*this)));
  }
};

// A stable 64-bit hash of a name (FNV-1a), for per-parameter random streams.
uint64_t name_hash(const std::string& name);

}  // namespace gantry::nn
