#include "gan/objective/orthogonal_term.h"

#include <string>

#include "core/ops/ops.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

class OrthogonalTerm : public ObjectiveTerm {
 public:
  OrthogonalTerm(Network network, float weight) : network_(network), weight_(weight) {}
  std::string name() const override { return "orthogonal_regularization"; }
  Network network() const override { return network_; }
  Tensor loss(TermInputs& in) const override {
    const Tensor norm = off_diagonal_gram_norm(in.replica().network(network_).params);
    if (!norm.defined()) return {};
    const float share = static_cast<float>(in.shard().real.size(0)) / in.loss_context().denominator;
    return ops::mul(norm, 0.5f * weight_ * share);
  }

 private:
  Network network_;
  float weight_;
};

}  // namespace

Tensor off_diagonal_gram_norm(const std::vector<Tensor>& weights) {
  Tensor total;
  for (const Tensor& w : weights) {
    if (w.dim() < 2) continue;  // biases, gains, scalars
    const int64_t rows = w.size(0);
    const Tensor flat = ops::reshape(w, Shape{rows, w.numel() / rows});
    const Tensor gram = ops::matmul(flat, flat, false, true);
    const Tensor index = ops::arange(0, static_cast<double>(rows), 1.0, w.device());
    const Tensor off_diagonal = ops::where(ops::eq(ops::reshape(index, Shape{rows, 1}), ops::reshape(index, Shape{1, rows})),
                                           ops::zeros(Shape{}, gram.device()), gram);
    const Tensor norm = ops::sum(ops::square(off_diagonal));
    total = total.defined() ? ops::add(total, norm) : norm;
  }
  return total;
}

TermPtr make_orthogonal_term(Network network, float weight) {
  return std::make_shared<OrthogonalTerm>(network, weight);
}

}  // namespace gantry::gan
