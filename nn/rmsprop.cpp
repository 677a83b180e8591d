#include "nn/rmsprop.h"

#include <cmath>

#include "backend/backend.h"

namespace gantry::nn {

RmsProp::RmsProp(std::vector<Tensor> params, RmsPropOptions o)
    : Optimizer("rmsprop", std::move(params), o.lr), o_(o) {
  validate(o_);
}

void RmsProp::validate(const RmsPropOptions& o) const {
  detail::check_hyper("rmsprop", "alpha", o.alpha, 0.0, HUGE_VAL);
  detail::check_hyper("rmsprop", "eps", o.eps, 0.0, HUGE_VAL);
  detail::check_hyper("rmsprop", "weight_decay", o.weight_decay, 0.0, HUGE_VAL);
  detail::check_hyper("rmsprop", "momentum", o.momentum, 0.0, HUGE_VAL);
}

std::vector<std::string> RmsProp::state_names() const {
  std::vector<std::string> names{"square_avg"};
  if (o_.momentum > 0) names.push_back("momentum_buffer");
  if (o_.centered) names.push_back("grad_avg");
  return names;
}

nlohmann::json RmsProp::hyperparameters() const {
  nlohmann::json j;
  j["alpha"] = o_.alpha;
  j["eps"] = o_.eps;
  j["weight_decay"] = o_.weight_decay;
  j["momentum"] = o_.momentum;
  j["centered"] = o_.centered;
  j["maximize"] = false;
  return j;
}

void RmsProp::set_hyperparameters(const nlohmann::json& group) {
  RmsPropOptions o = o_;
  o.alpha = group.at("alpha").get<double>();
  o.eps = group.at("eps").get<double>();
  o.weight_decay = group.at("weight_decay").get<double>();
  double momentum = group.at("momentum").get<double>();
  bool centered = group.at("centered").get<bool>();
  // The state's entries depend on these two, so they must agree with the constructed optimizer.
  GANTRY_CHECK((momentum > 0) == (o_.momentum > 0) && centered == o_.centered, "rmsprop: the "
               "saved state has momentum=", momentum, ", centered=", centered ? "true" : "false",
               " but this optimizer has momentum=", o_.momentum, ", centered=",
               o_.centered ? "true" : "false");
  GANTRY_CHECK(!group.at("maximize").get<bool>(), "rmsprop: maximize=true is not supported");
  o.momentum = momentum;
  validate(o);  // before assigning: a bad saved group leaves the optimizer as it was
  o_ = o;
}

void RmsProp::update(size_t i, const Tensor& param, const Tensor& grad) {
  init_state(i);
  ParamState& s = state(i);
  s.step += 1;
  RmsPropMath math{};
  math.lr = static_cast<float>(lr_);
  math.alpha = static_cast<float>(o_.alpha);
  math.one_minus_alpha = static_cast<float>(1.0 - o_.alpha);
  math.eps = static_cast<float>(o_.eps);
  math.weight_decay = static_cast<float>(o_.weight_decay);
  math.momentum = static_cast<float>(o_.momentum);
  math.centered = o_.centered;

  Tensor sq = s.get("square_avg");
  Tensor avg = o_.centered ? s.get("grad_avg") : Tensor();
  Tensor buf = o_.momentum > 0 ? s.get("momentum_buffer") : Tensor();
  const View avg_view = avg.defined() ? avg.view() : View{}, buf_view = buf.defined() ? buf.view() : View{};
  backend_for(param.device())
      .rmsprop_update(math, param.view(), grad.view(), sq.view(), avg.defined() ? &avg_view : nullptr,
                      buf.defined() ? &buf_view : nullptr);
  detail::bump_versions({param, sq, avg, buf});
}

}  // namespace gantry::nn
