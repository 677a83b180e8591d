#include "nn/optimizer.h"

#include <cmath>
#include <set>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry::nn {

Optimizer::Optimizer(std::string type, std::vector<Tensor> params, double lr)
    : lr_(lr), type_(std::move(type)), params_(std::move(params)), state_(params_.size()) {
  GANTRY_CHECK(!params_.empty(), type_, ": expected at least one parameter");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    GANTRY_CHECK(p.defined() && p.is_leaf() && p.requires_grad() && p.dtype() == DType::F32,
                 type_, ": parameter ", i, " must be an f32 leaf tensor requiring grad, found ",
                 p.str());
    for (size_t j = 0; j < i; ++j)
      GANTRY_CHECK(!params_[j].same(p), type_, ": parameter ", i, " appears twice (also at ", j, ")");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  GANTRY_CHECK(std::isfinite(lr) && lr >= 0, type_, ": expected a learning rate >= 0, found ", lr);
  lr_ = lr;
}

Tensor& Optimizer::ParamState::get(const std::string& name) {
  for (auto& [n, t] : tensors)
    if (n == name) return t;
  GANTRY_FAIL("optimizer state: no entry '", name, "'");
}

void Optimizer::init_state(size_t i) {
  ParamState& s = state_[i];
  if (s.initialized) return;
  s.tensors.clear();
  for (const std::string& name : state_names())
    s.tensors.emplace_back(name, ops::zeros(params_[i].shape(), params_[i].device()));
  s.step = 0;
  s.initialized = true;
}

void Optimizer::update_checked(size_t i, const Tensor& grad) {
  if (!grad.defined()) return;
  const Tensor& p = params_[i];
  GANTRY_CHECK(grad.shape() == p.shape() && grad.device() == p.device() && grad.dtype() == DType::F32,
               type_, ": gradient of parameter ", i, " must match it (", p.str(), "), found ", grad.str());
  update(i, p, grad);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) update_checked(i, params_[i].grad());
  ++steps_taken_;
}

void Optimizer::step(ArrayRef<Tensor> grads) {
  GANTRY_CHECK(grads.size() == params_.size(), type_, ": expected one gradient per parameter (",
               params_.size(), "), found ", grads.size());
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) update_checked(i, grads[i]);
  ++steps_taken_;
}

void Optimizer::zero_grad() {
  for (Tensor p : params_) p.set_grad(Tensor());
}

NamedTensors Optimizer::state_tensors() const {
  NamedTensors out;
  for (size_t i = 0; i < state_.size(); ++i) {
    const ParamState& s = state_[i];
    if (!s.initialized) continue;
    std::string prefix = "state." + std::to_string(i) + ".";
    if (saves_step()) {
      Tensor step = step_dtype() == DType::I64
                        ? ops::from_vector(std::vector<int64_t>{s.step}, Shape{})
                        : ops::from_vector(std::vector<float>{static_cast<float>(s.step)}, Shape{});
      out.emplace_back(prefix + "step", step);
    }
    for (const auto& [name, t] : s.tensors) out.emplace_back(prefix + name, t);
  }
  return out;
}

nlohmann::json Optimizer::param_groups() const {
  nlohmann::json group = hyperparameters();
  group["lr"] = lr_;
  std::vector<int64_t> ids(params_.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  group["params"] = ids;
  return nlohmann::json::array({group});
}

void Optimizer::load_state(const std::map<std::string, Tensor>& tensors,
                           const nlohmann::json& groups, const std::string& source) {
  std::vector<std::string> problems;
  // ---- param_groups
  nlohmann::json expected = param_groups();
  if (!groups.is_array() || groups.size() != 1 || !groups[0].is_object()) {
    problems.push_back("param_groups: expected a list of one group, found " + groups.dump());
  } else {
    const nlohmann::json& g = groups[0];
    for (auto& [key, value] : expected[0].items()) {
      if (!g.contains(key)) {
        problems.push_back("param_groups[0]." + key + ": missing");
      } else if (key == "params") {
        if (g[key] != value)
          problems.push_back("param_groups[0].params: expected " + value.dump() + " (" +
                             std::to_string(params_.size()) + " parameters), found " +
                             g[key].dump());
      } else if (g[key].type() != value.type() &&
                 !(g[key].is_number() && value.is_number())) {
        problems.push_back("param_groups[0]." + key + ": expected " + value.type_name() +
                           ", found " + g[key].dump());
      }
    }
  }
  // ---- state tensors: every entry must name a parameter and a known state name
  const std::vector<std::string> names = state_names();
  std::set<std::string> known_names(names.begin(), names.end());
  if (saves_step()) known_names.insert("step");
  std::map<size_t, std::map<std::string, Tensor>> per_param;
  std::map<size_t, std::set<std::string>> seen;  // includes entries with a wrong shape
  for (const auto& [key, t] : tensors) {
    size_t dot1 = key.find('.'), dot2 = key.find('.', dot1 + 1);
    bool parsed = key.rfind("state.", 0) == 0 && dot2 != std::string::npos;
    size_t index = 0;
    if (parsed) {
      std::string num = key.substr(dot1 + 1, dot2 - dot1 - 1);
      parsed = !num.empty() && num.find_first_not_of("0123456789") == std::string::npos &&
               num.size() < 10;
      if (parsed) index = std::stoul(num);
    }
    std::string name = parsed ? key.substr(dot2 + 1) : "";
    if (!parsed || index >= params_.size() || !known_names.count(name)) {
      problems.push_back("unexpected entry '" + key + "'");
      continue;
    }
    seen[index].insert(name);
    Shape want = name == "step" ? Shape{} : params_[index].shape();
    if (t.shape() != want) {
      problems.push_back("'" + key + "': expected shape " + want.str() + ", found " +
                         t.shape().str());
      continue;
    }
    per_param[index][name] = t;
  }
  for (const auto& [index, entries] : seen)
    for (const std::string& name : known_names)
      if (!entries.count(name))
        problems.push_back("missing entry 'state." + std::to_string(index) + "." + name + "'");
  if (!problems.empty()) {
    std::string msg = source + ": cannot load " + type_ + " optimizer state (" +
                      std::to_string(problems.size()) + " problem" +
                      (problems.size() == 1 ? "" : "s") + "):";
    for (const std::string& p : problems) msg += "\n  " + p;
    GANTRY_FAIL(msg);
  }
  // ---- apply
  NoGradGuard no_grad;
  set_hyperparameters(groups[0]);
  steps_taken_ = 0;  // the saved per-parameter steps tell (optimizers without them restart at 0)
  set_lr(groups[0]["lr"].get<double>());
  for (size_t i = 0; i < state_.size(); ++i) {
    state_[i] = ParamState{};
    auto it = per_param.find(i);
    if (it == per_param.end()) continue;
    init_state(i);
    for (auto& [name, t] : state_[i].tensors) ops::copy_(t, it->second.at(name));
    if (saves_step()) {
      const Tensor& st = it->second.at("step");
      state_[i].step = st.dtype() == DType::I64 ? st.to(Device::cpu()).data<int64_t>()[0]
                                                : static_cast<int64_t>(std::llround(st.item()));
      steps_taken_ = std::max(steps_taken_, state_[i].step);
    }
  }
}

namespace detail {

void bump_versions(std::initializer_list<Tensor> written) {
  for (const Tensor& t : written)
    if (t.defined()) t.bump_version();
}

void check_hyper(const char* optimizer, const char* name, double value, double lo, double hi,
                 bool hi_inclusive) {
  bool ok = std::isfinite(value) && value >= lo && (hi_inclusive ? value <= hi : value < hi);
  GANTRY_CHECK(ok, optimizer, ": expected ", name, " in [", lo, ", ", hi, hi_inclusive ? "]" : ")",
               ", found ", value);
}

}  // namespace detail

}  // namespace gantry::nn
