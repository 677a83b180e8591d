#include "losses/adversarial_loss.h"

namespace gantry::losses {

namespace {

using namespace gantry::ops;

Tensor flat(const Tensor& logits) {
  GANTRY_CHECK(logits.dim() == 1 || (logits.dim() == 2 && logits.size(1) == 1),
               "adversarial loss: expected logits of shape (n,) or (n, 1), found ",
               logits.shape().str());
  return reshape(logits, Shape{logits.size(0)});
}

// -t log s(x) - (1 - t) log(1 - s(x)) per example
Tensor bce(const Tensor& x, float target) {
  return target == 1.f ? softplus(neg(x)) : sub(softplus(x), mul(x, target));
}

class Minimax : public AdversarialLoss {
 public:
  Minimax(bool saturating, float real_label) : saturating_(saturating), real_label_(real_label) {}
  std::string name() const override { return saturating_ ? "minimax" : "non_saturating"; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f, const LossContext& ctx) const override {
    return add(reduce_examples(bce(flat(r), real_label_), ctx), reduce_examples(softplus(flat(f)), ctx));
  }
  Tensor generator_loss(const Tensor& f, const Tensor&, const LossContext& ctx) const override {
    // minimax: minimise log(1 - s(f)) = -softplus(f); non-saturating: minimise -log s(f)
    return saturating_ ? neg(reduce_examples(softplus(flat(f)), ctx))
                       : reduce_examples(softplus(neg(flat(f))), ctx);
  }

 private:
  bool saturating_;
  float real_label_;
};

class Wasserstein : public AdversarialLoss {
 public:
  std::string name() const override { return "wasserstein"; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f, const LossContext& ctx) const override {
    return reduce_examples(sub(flat(f), flat(r)), ctx);
  }
  Tensor generator_loss(const Tensor& f, const Tensor&, const LossContext& ctx) const override {
    return neg(reduce_examples(flat(f), ctx));
  }
};

class Hinge : public AdversarialLoss {
 public:
  std::string name() const override { return "hinge"; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f, const LossContext& ctx) const override {
    return add(reduce_examples(relu(rsub(flat(r), 1.f)), ctx), reduce_examples(relu(add(flat(f), 1.f)), ctx));
  }
  Tensor generator_loss(const Tensor& f, const Tensor&, const LossContext& ctx) const override {
    return neg(reduce_examples(flat(f), ctx));
  }
};

class LeastSquares : public AdversarialLoss {
 public:
  std::string name() const override { return "least_squares"; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f, const LossContext& ctx) const override {
    return mul(add(reduce_examples(square(add(flat(r), -1.f)), ctx), reduce_examples(square(flat(f)), ctx)), 0.5f);
  }
  Tensor generator_loss(const Tensor& f, const Tensor&, const LossContext& ctx) const override {
    return mul(reduce_examples(square(add(flat(f), -1.f)), ctx), 0.5f);
  }
};

// A relativistic loss: how much more real one side's examples look than the other's. D's loss
// puts the reals in the "more real" role, G's the fakes (whose real logits the adversarial term
// computes without history: they depend on D only).
class Relativistic : public AdversarialLoss {
 public:
  bool generator_needs_real() const override { return true; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f, const LossContext& ctx) const override {
    return pair(flat(r), flat(f), ctx);
  }
  Tensor generator_loss(const Tensor& f, const Tensor& r, const LossContext& ctx) const override {
    GANTRY_CHECK(r.defined(), name(), ": the generator loss needs the real logits");
    return pair(flat(f), flat(r), ctx);
  }

 protected:
  // The loss that a (n,) should look more real than b (n,).
  virtual Tensor pair(const Tensor& a, const Tensor& b, const LossContext& ctx) const = 0;
};

class RelativisticAverage : public Relativistic {
 public:
  explicit RelativisticAverage(float real_label) : real_label_(real_label) {}
  std::string name() const override { return "relativistic_average"; }

 private:
  // "a is more real than the average b, b less real than the average a"
  Tensor pair(const Tensor& a, const Tensor& b, const LossContext& ctx) const override {
    Tensor a_rel = sub(a, mean(b)), b_rel = sub(b, mean(a));
    return add(reduce_examples(bce(a_rel, real_label_), ctx), reduce_examples(softplus(b_rel), ctx));
  }
  float real_label_;
};

// Pairing each real example with the fake of its index (not with a batch mean, as RaGAN does)
// keeps the loss a sum over examples, so a replica's share needs no other replica's logits.
class RelativisticPairing : public Relativistic {
 public:
  std::string name() const override { return "relativistic_pairing"; }

 private:
  // "a_i is more real than b_i": sum_i softplus(b_i - a_i) over the denominator
  Tensor pair(const Tensor& a, const Tensor& b, const LossContext& ctx) const override {
    GANTRY_CHECK(a.shape() == b.shape(), "relativistic_pairing: pairs real and fake logits by example index, so "
                 "expected equal shapes, found ", a.shape().str(), " and ", b.shape().str());
    return reduce_examples(softplus(sub(b, a)), ctx);
  }
};

}  // namespace

std::unique_ptr<AdversarialLoss> make_minimax(float real_label) {
  return std::make_unique<Minimax>(true, real_label);
}
std::unique_ptr<AdversarialLoss> make_non_saturating(float real_label) {
  return std::make_unique<Minimax>(false, real_label);
}
std::unique_ptr<AdversarialLoss> make_wasserstein() { return std::make_unique<Wasserstein>(); }
std::unique_ptr<AdversarialLoss> make_hinge() { return std::make_unique<Hinge>(); }
std::unique_ptr<AdversarialLoss> make_least_squares() { return std::make_unique<LeastSquares>(); }
std::unique_ptr<AdversarialLoss> make_relativistic_average(float real_label) {
  return std::make_unique<RelativisticAverage>(real_label);
}
std::unique_ptr<AdversarialLoss> make_relativistic_pairing() { return std::make_unique<RelativisticPairing>(); }

}  // namespace gantry::losses
