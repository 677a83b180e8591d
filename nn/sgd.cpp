#include "nn/sgd.h"

#include <cmath>

#include "backend/backend.h"

namespace gantry::nn {

Sgd::Sgd(std::vector<Tensor> params, SgdOptions o)
    : Optimizer("sgd", std::move(params), o.lr), o_(o) {
  validate(o_);
}

void Sgd::validate(const SgdOptions& o) const {
  detail::check_hyper("sgd", "momentum", o.momentum, 0.0, HUGE_VAL);
  detail::check_hyper("sgd", "dampening", o.dampening, 0.0, 1.0);
  detail::check_hyper("sgd", "weight_decay", o.weight_decay, 0.0, HUGE_VAL);
  GANTRY_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "sgd: nesterov momentum "
               "requires momentum > 0 and dampening 0, found momentum=", o.momentum,
               ", dampening=", o.dampening);
}

std::vector<std::string> Sgd::state_names() const {
  if (o_.momentum != 0) return {"momentum_buffer"};
  return {};
}

nlohmann::json Sgd::hyperparameters() const {
  nlohmann::json j;
  j["momentum"] = o_.momentum;
  j["dampening"] = o_.dampening;
  j["weight_decay"] = o_.weight_decay;
  j["nesterov"] = o_.nesterov;
  j["maximize"] = false;
  return j;
}

void Sgd::set_hyperparameters(const nlohmann::json& group) {
  SgdOptions o = o_;
  double momentum = group.at("momentum").get<double>();
  GANTRY_CHECK((momentum != 0) == (o_.momentum != 0), "sgd: the saved state has momentum=",
               momentum, " but this optimizer has momentum=", o_.momentum);
  GANTRY_CHECK(!group.at("maximize").get<bool>(), "sgd: maximize=true is not supported");
  o.momentum = momentum;
  o.dampening = group.at("dampening").get<double>();
  o.weight_decay = group.at("weight_decay").get<double>();
  o.nesterov = group.at("nesterov").get<bool>();
  validate(o);  // before assigning: a bad saved group leaves the optimizer as it was
  o_ = o;
}

void Sgd::update(size_t i, const Tensor& param, const Tensor& grad) {
  // The momentum buffer exists once a step has been taken; the first step clones the gradient.
  bool first = !state(i).initialized;
  init_state(i);
  SgdMath math{};
  math.lr = static_cast<float>(lr_);
  math.momentum = static_cast<float>(o_.momentum);
  math.one_minus_dampening = static_cast<float>(1.0 - o_.dampening);
  math.weight_decay = static_cast<float>(o_.weight_decay);
  math.nesterov = o_.nesterov;
  math.first = first;

  Tensor buf = o_.momentum != 0 ? state(i).get("momentum_buffer") : Tensor();
  const View buf_view = buf.defined() ? buf.view() : View{};
  backend_for(param.device()).sgd_update(math, param.view(), grad.view(), buf.defined() ? &buf_view : nullptr);
  detail::bump_versions({param, buf});
}

}  // namespace gantry::nn
