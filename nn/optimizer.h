// Optimizer base: a list of parameters (one parameter group), per-parameter state, and an
// in-place step. State is kept in PyTorch's optimizer.state_dict() layout: tensors named
// "state.<i>.<name>" (i = the parameter's index in the list) and the group's hyperparameters as
// JSON ("param_groups"), so nn/state_dict.h can save it to safetensors.
//
// Note [optimizer updates]: step() writes into each parameter's storage (under NoGradGuard)
// and bumps its version, so the parameter handles held by modules and by the strategy stay
// valid, and a graph that saved a parameter before the update refuses to run backward through
// it. Parameters whose gradient is undefined are skipped, as in PyTorch. The per-element math
// lives in backend/optimizer_math.h; the parameter's backend runs it in one fused pass.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/array_ref.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace gantry::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "adam", "adamw", "rmsprop", "sgd"
  const std::string& type() const { return type_; }
  const std::vector<Tensor>& params() const { return params_; }

  // One update of every parameter that has a gradient (Note [optimizer updates]).
  void step();
  // The same update from the gradients given, one per parameter in order (undefined ones are
  // skipped), instead of the parameters' .grad: the reducer's summed flat buffer steps the
  // optimizer directly (Note [gradient overlap] in distribute/gradient_reducer.h).
  void step(ArrayRef<Tensor> grads);
  // Sets every parameter's gradient to undefined (PyTorch's set_to_none=True).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);
  // Updates taken so far (step() calls; after load_state, the largest saved per-parameter step).
  int64_t steps_taken() const { return steps_taken_; }

  // ---- state, in PyTorch's layout
  // "state.<i>.<name>" for every parameter with state (after its first update).
  NamedTensors state_tensors() const;
  // [{"lr": ..., <hyperparameters>, "params": [0, ..., n-1]}]
  nlohmann::json param_groups() const;
  // Restores state and hyperparameters. Tensors are copied into the optimizer's own state
  // (on the parameters' devices). Every problem (unknown entry, missing entry, wrong shape,
  // wrong optimizer type or parameter count) is reported at once, naming `source`.
  void load_state(const std::map<std::string, Tensor>& tensors, const nlohmann::json& param_groups,
                  const std::string& source);

 protected:
  Optimizer(std::string type, std::vector<Tensor> params, double lr);

  struct ParamState {
    bool initialized = false;
    int64_t step = 0;
    std::vector<std::pair<std::string, Tensor>> tensors;  // in PyTorch's insertion order
    Tensor& get(const std::string& name);
  };

  // Updates parameter i (its gradient is defined, checked and on its device).
  virtual void update(size_t i, const Tensor& param, const Tensor& grad) = 0;
  // Hyperparameters other than lr, as PyTorch names them in param_groups.
  virtual nlohmann::json hyperparameters() const = 0;
  // Restores them from a saved group (already checked to hold every key of hyperparameters()).
  virtual void set_hyperparameters(const nlohmann::json& group) = 0;
  // Names of the state tensors parameter i has once initialised, and how "step" is saved
  // (F32 for Adam as torch 1.13 stores a float tensor, I64 for RMSprop, none for SGD).
  virtual std::vector<std::string> state_names() const = 0;
  virtual bool saves_step() const { return true; }
  virtual DType step_dtype() const { return DType::F32; }

  ParamState& state(size_t i) { return state_[i]; }
  // Checks parameter i's gradient and updates it; an undefined gradient skips it.
  void update_checked(size_t i, const Tensor& grad);
  // Creates the zero state tensors of parameter i (state_names(), shaped like the parameter).
  void init_state(size_t i);

  double lr_;

 private:
  std::string type_;
  std::vector<Tensor> params_;
  std::vector<ParamState> state_;
  int64_t steps_taken_ = 0;
};

namespace detail {

// Marks tensors an update wrote (undefined ones are skipped), for autograd's version checks.
void bump_versions(std::initializer_list<Tensor> written);

// Validates an optimizer's hyperparameter (finite, >= lo [, < hi]); `name` and `optimizer`
// appear in the error.
void check_hyper(const char* optimizer, const char* name, double value, double lo, double hi,
                 bool hi_inclusive = true);

}  // namespace detail

}  // namespace gantry::nn
