#include "nn/module.h"

#include "core/autograd/grad_mode.h"

namespace gantry::nn {

uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// ---- forward

Tensor Module::forward(const Tensor& x) {
  run_pre_hooks();
  return forward_impl(x);
}

Tensor Module::forward(const Tensor& x, const Tensor& labels) {
  run_pre_hooks();
  return forward_impl(x, labels);
}

Tensor Module::forward_impl(const Tensor&, const Tensor&) {
  GANTRY_FAIL(type_name_, ": forward with labels is not supported (this module takes one input)");
}

// ---- registry

const Module::Slot* Module::find(std::string_view name) const {
  for (const Slot& s : slots_)
    if (s.name == name) return &s;
  return nullptr;
}

Module::Slot* Module::find(std::string_view name) {
  for (Slot& s : slots_)
    if (s.name == name) return &s;
  return nullptr;
}

void Module::check_new_name(const std::string& name) const {
  GANTRY_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_,
               ": expected a non-empty name without '.', found '", name, "'");
  GANTRY_CHECK(find(name) == nullptr, type_name_, ": '", name, "' is already registered");
  for (const auto& [n, m] : children_)
    GANTRY_CHECK(n != name, type_name_, ": '", name, "' is already a child module");
}

const Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name);
  GANTRY_CHECK(t.defined() && t.is_leaf(), type_name_, ": parameter '", name,
               "' must be a defined leaf tensor");
  if (requires_grad) t.set_requires_grad(true);
  slots_.push_back({name, SlotKind::Parameter, std::move(t)});
  return slots_.back().tensor;
}

const Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name);
  slots_.push_back({name, SlotKind::Buffer, std::move(t)});
  return slots_.back().tensor;
}

const Tensor& Module::register_attribute(const std::string& name, Tensor t) {
  check_new_name(name);
  slots_.push_back({name, SlotKind::Attribute, std::move(t)});
  return slots_.back().tensor;
}

ModulePtr Module::register_module(const std::string& name, ModulePtr module) {
  check_new_name(name);
  GANTRY_CHECK(module != nullptr, type_name_, ": child '", name, "' is null");
  children_.emplace_back(name, module);
  return module;
}

void Module::remove(const std::string& name) {
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (it->name == name) {
      slots_.erase(it);
      return;
    }
  }
  GANTRY_FAIL(type_name_, ": cannot remove '", name, "': no such parameter, buffer or attribute");
}

bool Module::has(std::string_view name) const { return find(name) != nullptr; }

const Tensor& Module::get(std::string_view name) const {
  const Slot* s = find(name);
  GANTRY_CHECK(s != nullptr, type_name_, ": no parameter, buffer or attribute named '", name, "'");
  return s->tensor;
}

void Module::set(const std::string& name, Tensor t) {
  Slot* s = find(name);
  GANTRY_CHECK(s != nullptr, type_name_, ": no parameter, buffer or attribute named '", name, "'");
  if (s->kind == SlotKind::Parameter && !t.requires_grad()) t.set_requires_grad(true);
  s->tensor = std::move(t);
}

Module::SlotKind Module::kind_of(const std::string& name) const {
  const Slot* s = find(name);
  GANTRY_CHECK(s != nullptr, type_name_, ": no parameter, buffer or attribute named '", name, "'");
  return s->kind;
}

const ModulePtr& Module::child(const std::string& name) const {
  for (const auto& [n, m] : children_)
    if (n == name) return m;
  GANTRY_FAIL(type_name_, ": no child module named '", name, "'");
}

const ModulePtr& Module::child(size_t index) const {
  GANTRY_CHECK(index < children_.size(), type_name_, ": child index ", index, " out of range (",
               children_.size(), " children)");
  return children_[index].second;
}

// ---- iteration

void Module::collect(const std::string& prefix, bool recurse, bool params, bool buffers,
                     NamedTensors& out) const {
  for (const Slot& s : slots_) {
    bool want = (params && s.kind == SlotKind::Parameter) || (buffers && s.kind == SlotKind::Buffer);
    if (want) out.emplace_back(prefix + s.name, s.tensor);
  }
  if (!recurse) return;
  for (const auto& [name, m] : children_) m->collect(prefix + name + ".", true, params, buffers, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", recurse, true, false, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", recurse, false, true, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::state_dict() const {
  // PyTorch's _save_to_state_dict: this module's parameters, then its buffers, then children.
  NamedTensors out;
  collect("", false, true, false, out);
  collect("", false, false, true, out);
  for (const auto& [name, m] : children_)
    for (auto& [n, t] : m->state_dict()) out.emplace_back(name + "." + n, t);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (const auto& [name, m] : children_)
    for (auto& [n, sub] : m->named_modules()) out.emplace_back(n.empty() ? name : name + "." + n, sub);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : parameters()) n += t.numel();
  return n;
}

// ---- mode and placement

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

void Module::to(Device device) {
  for (Slot& s : slots_) {
    if (!s.tensor.defined() || s.tensor.device() == device) continue;
    bool rg = s.tensor.requires_grad();
    s.tensor = s.tensor.to(device);
    if (rg) s.tensor.set_requires_grad(true);
  }
  for (auto& [n, m] : children_) m->to(device);
}

Device Module::device() const {
  for (const Slot& s : slots_)
    if (s.tensor.defined()) return s.tensor.device();
  for (const auto& [n, m] : children_)
    if (!m->state_dict().empty()) return m->device();
  return Device::cpu();
}

ModulePtr Module::clone(std::optional<Device> device) const {
  ModulePtr copy = shallow_copy();
  for (Slot& s : copy->slots_) {
    if (!s.tensor.defined()) continue;
    bool rg = s.tensor.requires_grad();
    Device target = device.value_or(s.tensor.device());
    s.tensor = target == s.tensor.device() ? s.tensor.clone() : s.tensor.to(target);
    if (rg) s.tensor.set_requires_grad(true);
  }
  for (auto& [n, m] : copy->children_) m = m->clone(device);
  return copy;
}

void Module::zero_grad() {
  for (Slot& s : slots_)
    if (s.kind == SlotKind::Parameter && s.tensor.defined()) s.tensor.set_grad(Tensor());
  for (auto& [n, m] : children_) m->zero_grad();
}

void Module::set_rng(RngKey key, uint64_t first_example) {
  uint64_t index = 0;
  set_rng_impl(key, first_example, index);
}

void Module::set_rng_impl(RngKey key, uint64_t first_example, uint64_t& index) {
  rng_key_ = RngKey{key.seed, stream_id(key.stream, index++)};
  rng_first_example_ = first_example;
  for (auto& [n, m] : children_) m->set_rng_impl(key, first_example, index);
}

std::string Module::str() const {
  std::string out;
  str_impl(out, 0);
  return out;
}

void Module::str_impl(std::string& out, int indent) const {
  out += type_name_ + "(" + extra_repr();
  if (!children_.empty()) {
    out += "\n";
    for (const auto& [name, m] : children_) {
      out += std::string(indent + 2, ' ') + "(" + name + "): ";
      m->str_impl(out, indent + 2);
      out += "\n";
    }
    out += std::string(indent, ' ');
  }
  out += ")";
}

}  // namespace gantry::nn
