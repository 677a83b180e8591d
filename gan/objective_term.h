// Note [objective terms]: a GAN's objective is a list of terms, each one part of one network's
// loss: an adversarial loss, a penalty (WGAN-GP, R1, R2), ACGAN's auxiliary classification, path
// length regularisation, or a statistic without a loss (ADA's E[sign D(real)]). An update of a
// network adds the losses of its network's active terms in list order and backpropagates their
// sum once (Note [phases] in gan/phases.h); each term's loss is logged as a component of its
// network's loss under the term's name. A plugin adds a term by name (gan/term_registry.h,
// docs/plugins.md), configured under `loss.terms`.
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
#include "gan/stats_reporter.h"

namespace gantry::gan {

enum class Network { Discriminator, Generator };

class TermInputs;

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
  // Lazy regularisation: false on the global steps the term skips (it scales itself by its
  // interval on the others, as StyleGAN2 does).
  virtual bool active_at(int64_t /*step*/) const { return true; }
  // False for a statistic only: loss() reports and returns an undefined tensor.
  virtual bool has_loss() const { return true; }
  // True when loss() joins collectives (path length sums its lengths over the replicas): it then
  // runs on every replica, even one whose shard is empty, outside the stand-in (Note [empty
  // shards] in gan/replica.cpp), after the other terms.
  virtual bool joins_collectives() const { return false; }
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
