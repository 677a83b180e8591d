// Note [objective terms]: a GAN's objective is a list of terms (GanSpec::terms), each one part of
// one network's loss: an adversarial loss, a penalty (WGAN-GP, R1, R2), ACGAN's auxiliary
// classification, path length regularisation, or a statistic without a loss (ADA's E[sign
// D(real)]). Every one comes from the config through the term registry (gan/objective/term_registry.h): the
// loss section's own keys (type, penalties, auxiliary_classification_weight, path_length) name
// built-in terms, `loss.terms` lists further ones, and a plugin adds more by name
// (docs/plugins.md). An update of a network adds the losses of its network's active terms in list
// order and backpropagates their sum once (Note [phases] in gan/step/phases.h); each term's loss is
// logged as a component of its network's loss under the term's name. A term may declare that it
// replaces another of its network (top-k replaces G's "adversarial"): the objective then runs it
// in the other's place (gan/objective/objective.h).
//
// Note [lazy terms]: a lazy regulariser declares its interval k (interval()): it is active on the
// global steps k divides and scales itself by k there, as StyleGAN2 does. That one declaration is
// the whole of laziness: the estimator skips the term on other steps (active_at), and the
// optimizer of its network derives the lazy-regularisation correction from the largest interval
// among its terms (Note [lazy regularisation correction] in gan/objective/objective.h).
//
// Note [term state]: a term that carries values from update to update (LeCam's anchors) declares
// them in state(); each replica holds its own copy (Replica::term_state, created from the
// declarations, reached through TermInputs::state), so the replicas' threads never share it. A name
// is declared by one term at most: each replica holds one tensor per declared name. The term keeps
// the copies equal by moving them only with values every replica sees alike (all-reduced statistics
// of the global batch). Checkpoints save replica 0's copy ("term_state.<name>") and a resume
// restores it into every replica. `loss.terms` may change on a resume: the state of a term no
// longer listed is dropped (gan_train warns, naming it), a term added starts from its initial
// values, and state a listed term declares with another shape is refused (docs/config.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gan/spec/stats_reporter.h"

namespace gantry::gan {

enum class Network { Discriminator, Generator };

class TermInputs;
struct Replica;

// A tensor of state a term keeps across updates (Note [term state]): its name, unique among the
// objective's terms ("lecam/anchors"), and its initial values, a 1-d f32 tensor.
struct TermStateDeclaration {
  std::string name;
  std::vector<float> initial;
};

class ObjectiveTerm {
 public:
  virtual ~ObjectiveTerm() = default;
  // The component its loss is logged as ("adversarial", "r1_penalty", ...).
  virtual std::string name() const = 0;
  // The network whose update adds (and differentiates) the term.
  virtual Network network() const = 0;
  // The global steps between two of its losses (1: every step; Note [lazy terms]).
  virtual int64_t interval() const { return 1; }
  bool active_at(int64_t step) const { return step % interval() == 0; }
  // The name of the term of its network it runs in the place of ("adversarial" for top-k), or "".
  virtual std::string replaces() const { return {}; }
  // True when loss() must see the whole global batch at once (top-k chooses among all of its
  // fakes): the objective then refuses train.micro_batches > 1.
  virtual bool needs_whole_batch() const { return false; }
  // True for a term GanEstimator::evaluate runs on held-out data (the adversarial terms): in eval
  // mode, without gradients and without augmentation (Note [evaluation]).
  virtual bool evaluated() const { return false; }
  // False for a statistic only: loss() reports and returns an undefined tensor.
  virtual bool has_loss() const { return true; }
  // True when loss() joins collectives (path length sums its lengths over the replicas): it then
  // runs on every replica, even one whose shard is empty, outside the stand-in (Note [empty
  // shards] in gan/step/replica.cpp), after the other terms.
  virtual bool joins_collectives() const { return false; }
  // Refuses networks it cannot work with (path length needs a generator with style latents) when
  // a replica is built, before any step; errors name the config key.
  virtual void check_networks(const Replica& /*replica*/) const {}
  // Statistics it reports besides its loss (Note [stats reporter]), declared once per replica.
  virtual std::vector<StatDeclaration> statistics() const { return {}; }
  // State it carries across updates (Note [term state]).
  virtual std::vector<TermStateDeclaration> state() const { return {}; }
  // The term's weighted loss on this micro-batch, a sum over its examples divided by the global
  // batch (so the replicas' losses add up to the global mean), or undefined when it adds nothing
  // this time. Called concurrently from every replica's thread: a term keeps no mutable state of its
  // own (declared state lives on the replica).
  virtual Tensor loss(TermInputs& in) const = 0;
};

using TermPtr = std::shared_ptr<const ObjectiveTerm>;

}  // namespace gantry::gan
