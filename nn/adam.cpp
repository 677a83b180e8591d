#include "nn/adam.h"

#include <cmath>

#include "backend/backend.h"
#include "nn/adamw.h"

namespace gantry::nn {

Adam::Adam(std::vector<Tensor> params, AdamOptions o) : Adam("adam", std::move(params), o, false) {}

Adam::Adam(std::string type, std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(type), std::move(params), o.lr), o_(o), decoupled_(decoupled) {
  validate(o_);
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions o) : Adam("adamw", std::move(params), o, true) {}

void Adam::validate(const AdamOptions& o) const {
  const char* name = decoupled_ ? "adamw" : "adam";
  detail::check_hyper(name, "beta1", o.beta1, 0.0, 1.0, false);
  detail::check_hyper(name, "beta2", o.beta2, 0.0, 1.0, false);
  detail::check_hyper(name, "eps", o.eps, 0.0, HUGE_VAL);
  detail::check_hyper(name, "weight_decay", o.weight_decay, 0.0, HUGE_VAL);
}

void Adam::set_beta2(double beta2) {
  detail::check_hyper(decoupled_ ? "adamw" : "adam", "beta2", beta2, 0.0, 1.0, false);
  o_.beta2 = beta2;
}

std::vector<std::string> Adam::state_names() const {
  if (o_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

nlohmann::json Adam::hyperparameters() const {
  nlohmann::json j;
  j["betas"] = {o_.beta1, o_.beta2};
  j["eps"] = o_.eps;
  j["weight_decay"] = o_.weight_decay;
  j["amsgrad"] = o_.amsgrad;
  j["maximize"] = false;
  return j;
}

void Adam::set_hyperparameters(const nlohmann::json& group) {
  AdamOptions o = o_;
  const auto& betas = group.at("betas");
  GANTRY_CHECK(betas.is_array() && betas.size() == 2, type(), ": expected betas [beta1, beta2], "
               "found ", betas.dump());
  o.beta1 = betas[0].get<double>();
  o.beta2 = betas[1].get<double>();
  o.eps = group.at("eps").get<double>();
  o.weight_decay = group.at("weight_decay").get<double>();
  GANTRY_CHECK(group.at("amsgrad").get<bool>() == o_.amsgrad, type(), ": the saved state has "
               "amsgrad=", group.at("amsgrad").dump(), " but this optimizer has amsgrad=",
               o_.amsgrad ? "true" : "false");
  GANTRY_CHECK(!group.at("maximize").get<bool>(), type(), ": maximize=true is not supported");
  validate(o);  // before assigning: a bad saved group leaves the optimizer as it was
  o_ = o;
}

void Adam::update(size_t i, const Tensor& param, const Tensor& grad) {
  init_state(i);
  ParamState& s = state(i);
  s.step += 1;
  const double t = static_cast<double>(s.step);
  const double bc1 = 1.0 - std::pow(o_.beta1, t), bc2 = 1.0 - std::pow(o_.beta2, t);
  AdamMath math{};
  math.beta1 = static_cast<float>(o_.beta1);
  math.beta2 = static_cast<float>(o_.beta2);
  math.one_minus_beta1 = static_cast<float>(1.0 - o_.beta1);
  math.one_minus_beta2 = static_cast<float>(1.0 - o_.beta2);
  math.step_size = static_cast<float>(lr_ / bc1);
  math.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  math.eps = static_cast<float>(o_.eps);
  math.weight_decay = decoupled_ ? 0.f : static_cast<float>(o_.weight_decay);
  math.decoupled = decoupled_ ? static_cast<float>(1.0 - lr_ * o_.weight_decay) : 1.f;
  math.amsgrad = o_.amsgrad;

  Tensor m = s.get("exp_avg"), v = s.get("exp_avg_sq");
  Tensor max_sq = o_.amsgrad ? s.get("max_exp_avg_sq") : Tensor();
  const View max_view = max_sq.defined() ? max_sq.view() : View{};
  backend_for(param.device())
      .adam_update(math, param.view(), grad.view(), m.view(), v.view(), max_sq.defined() ? &max_view : nullptr);
  detail::bump_versions({param, m, v, max_sq});
}

}  // namespace gantry::nn
