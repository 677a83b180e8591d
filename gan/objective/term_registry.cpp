#include "gan/objective/term_registry.h"

#include <optional>
#include <utility>

#include "augment/policy_config.h"
#include "core/named_registry.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/auxiliary_classification_term.h"
#include "gan/objective/bcr_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/lecam_term.h"
#include "gan/objective/orthogonal_term.h"
#include "gan/objective/path_length_term.h"
#include "gan/objective/real_sign_statistic.h"
#include "gan/objective/top_k_term.h"
#include "gan/objective/zcr_term.h"
#include "losses/registry.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

namespace {

// ---- the built-in terms the loss section's own keys name

constexpr ConfigKey kAuxiliaryClassificationKeys[] = {
    number_key("auxiliary_classification_weight", "0", "ACGAN: D's class logits' cross-entropy weight")
        .at_least(0)
        .expecting("a non-negative number"),
};

constexpr ConfigKey kPathLengthKeys[] = {
    number_key("weight", "", "the penalty's weight; 0 turns it off")
        .at_least(0)
        .expecting("a non-negative number")
        .documented_default("`2` with a `stylegan2` generator, else `0`"),
    int_key("batch_shrink", "2", "its batch is the global batch / this").at_least(1),
    number_key("decay", "0.01", "pl_mean's decay per update").in(0, 1),
    int_key("interval", "4", "G steps between penalties (lazy when > 1)").at_least(1),
};

// ---- the terms a config lists by type (loss.penalties, loss.terms)

constexpr ConfigKey kWganGpKeys[] = {
    number_key("weight", "10", "the penalty's weight").at_least(0).scheduled(),
    number_key("target", "1", "the gradient norm penalised towards").above(0),
    bool_key("one_sided", "false", "only norms above the target are penalised"),
};

constexpr ConfigKey kZeroCentredKeys[] = {
    number_key("gamma", "10", "the penalty is gamma / 2 x the squared gradient norm").at_least(0).scheduled(),
    int_key("interval", "1", "global steps between penalties (lazy when > 1, scaled by it)").at_least(1),
    object_key("approximate", "", "the finite-difference form, {\"sigma\": 0.01}; absent: exact (a double backward)"),
};

// R1's and R2's `approximate` object (Note [approximate R1 and R2])
constexpr ConfigKey kApproximatePenaltyKeys[] = {
    number_key("sigma", "0.01", "standard deviation of the perturbation of D's input").above(0),
};

// The approximate form when the penalty's config has the key, read with its own keys.
std::optional<ApproximatePenalty> read_approximate(JsonReader& c) {
  if (!c.has("approximate")) return std::nullopt;
  JsonReader r(c.read("approximate"), c.key_path("approximate"), kApproximatePenaltyKeys);
  ApproximatePenalty a;
  a.sigma = static_cast<float>(r.read_number("sigma"));
  r.finish();
  return a;
}

constexpr ConfigKey kBcrKeys[] = {
    number_key("lambda_real", "10", "weight of the reals' consistency").at_least(0),
    number_key("lambda_fake", "10", "weight of the fakes' consistency").at_least(0),
    array_key("policy", R"(["translation"])", "T's DiffAugment transforms (names as augment.policy)"),
    number_key("translation_ratio", "0.125", "translation: the largest shift, a fraction of the size").in(0, 1),
    number_key("cutout_ratio", "0.5", "cutout: the erased square's side, a fraction of the size").in(0, 1),
};

constexpr ConfigKey kLeCamKeys[] = {
    number_key("weight", "0.3", "the penalty's weight").at_least(0),
    number_key("decay", "0.99", "the anchors' decay per D update").in(0, 1).below(1),
    int_key("start_step", "1000", "global step from which the anchors average (decay 0 before)").at_least(0),
};

constexpr ConfigKey kTopKKeys[] = {
    number_key("gamma", "0.99", "k's decay per epoch").in(0, 1).above(0),
    number_key("nu", "0.5", "k's floor as a fraction of the global batch").in(0, 1).above(0),
    int_key("steps_per_epoch", "1000", "global steps per epoch of k's decay").at_least(1),
};

constexpr ConfigKey kZcrKeys[] = {
    number_key("lambda_dis", "5", "weight of D's latent consistency").at_least(0),
    number_key("sigma_noise", "0.05", "standard deviation of the latent perturbation").above(0),
};

constexpr ConfigKey kZcrGeneratorKeys[] = {
    number_key("lambda_gen", "0.5", "weight of G's latent diversity").at_least(0),
    number_key("sigma_noise", "0.05", "standard deviation of the latent perturbation").above(0),
};

constexpr ConfigKey kOrthogonalKeys[] = {
    number_key("weight", "1e-4", "BigGAN's strength beta").at_least(0),
    string_key("network", R"("generator")", "the network whose weights it regularises").one_of("generator, discriminator"),
};

float read_float(JsonReader& r, std::string_view key) { return static_cast<float>(r.read_number(key)); }

std::vector<TermPtr> one(TermPtr term) { return {std::move(term)}; }

NamedRegistry<ObjectiveTermFactory>& term_registry() {
  static NamedRegistry<ObjectiveTermFactory>* r = [] {
    auto* reg = new NamedRegistry<ObjectiveTermFactory>("objective term");
    constexpr bool kBuiltFromSection = false;
    reg->add(
        "adversarial",
        [](JsonReader& c, TermContext& ctx) {
          ctx.adversarial_loss = losses::make_adversarial_loss(c);
          return make_adversarial_terms(ctx.adversarial_loss);
        },
        losses::adversarial_loss_keys(), kBuiltFromSection);
    reg->add(
        "auxiliary_classification",
        [](JsonReader& c, TermContext& ctx) {
          const float weight = read_float(c, "auxiliary_classification_weight");
          if (weight == 0.f) return std::vector<TermPtr>{};
          GANTRY_CHECK(ctx.num_classes > 0, c.key_path("auxiliary_classification_weight"),
                       ": needs labelled data (data.use_labels)");
          return make_auxiliary_classification_terms(weight);
        },
        kAuxiliaryClassificationKeys, kBuiltFromSection);
    reg->add(
        "path_length",
        [](JsonReader& c, TermContext& ctx) {
          PathLengthSettings s;
          s.weight = static_cast<float>(c.read("weight", ctx.style_generator ? 2.0 : 0.0).get<double>());
          s.batch_shrink = c.read_int("batch_shrink");
          s.decay = c.read_number("decay");
          s.interval = c.read_int("interval");
          return s.enabled() ? one(make_path_length_term(s)) : std::vector<TermPtr>{};
        },
        kPathLengthKeys, kBuiltFromSection);
    reg->add(
        "real_sign", [](JsonReader&, TermContext&) { return one(make_real_sign_statistic()); }, {}, kBuiltFromSection);

    reg->add(
        "wgan_gp",
        [](JsonReader& c, TermContext&) {
          const nn::ValueSchedule weight = nn::read_value_schedule(c, "weight");
          return one(make_wgan_gp_term(weight, read_float(c, "target"), c.read_bool("one_sided")));
        },
        kWganGpKeys);
    // R1 at the reals and R2 at the fakes: the same options
    using ZeroCentred =
        std::pair<const char*, TermPtr (*)(nn::ValueSchedule, int64_t, std::optional<ApproximatePenalty>)>;
    for (const ZeroCentred& penalty : {ZeroCentred{"r1", make_r1_term}, ZeroCentred{"r2", make_r2_term}}) {
      reg->add(
          penalty.first,
          [make = penalty.second](JsonReader& c, TermContext&) {
            const nn::ValueSchedule gamma = nn::read_value_schedule(c, "gamma");
            const int64_t interval = c.read_int("interval");
            return one(make(gamma, interval, read_approximate(c)));
          },
          kZeroCentredKeys);
    }
    reg->add(
        "bcr",
        [](JsonReader& c, TermContext&) {
          const float lambda_real = read_float(c, "lambda_real"), lambda_fake = read_float(c, "lambda_fake");
          const augment::AugmentPolicy policy = augment::read_augment_policy(c);
          if (!policy.any()) c.fail("policy", "a non-empty list of transforms (T of bCR)");
          return one(make_bcr_term(lambda_real, lambda_fake, policy));
        },
        kBcrKeys);
    reg->add(
        "lecam",
        [](JsonReader& c, TermContext&) {
          LeCamSettings s;
          s.weight = c.read_number("weight");
          s.decay = c.read_number("decay");
          s.start_step = c.read_int("start_step");
          return one(make_lecam_term(s));
        },
        kLeCamKeys);
    reg->add(
        "top_k",
        [](JsonReader& c, TermContext& ctx) {
          TopKSettings s;
          s.gamma = c.read_number("gamma");
          s.nu = c.read_number("nu");
          s.steps_per_epoch = c.read_int("steps_per_epoch");
          return one(make_top_k_term(s, ctx.adversarial_loss));
        },
        kTopKKeys);
    reg->add(
        "orthogonal",
        [](JsonReader& c, TermContext&) {
          const float weight = read_float(c, "weight");
          const Network network = c.read_string("network") == "generator" ? Network::Generator : Network::Discriminator;
          return one(make_orthogonal_term(network, weight));
        },
        kOrthogonalKeys);
    reg->add(
        "zcr",
        [](JsonReader& c, TermContext&) {
          return one(make_zcr_term(read_float(c, "lambda_dis"), read_float(c, "sigma_noise")));
        },
        kZcrKeys);
    reg->add(
        "zcr_generator",
        [](JsonReader& c, TermContext&) {
          return one(make_zcr_generator_term(read_float(c, "lambda_gen"), read_float(c, "sigma_noise")));
        },
        kZcrGeneratorKeys);
    return reg;
  }();
  return *r;
}

ObjectiveTermFactory of_one(SingleTermFactory factory) {
  return [factory = std::move(factory)](JsonReader& r, TermContext&) { return one(factory(r)); };
}

void check_built(const std::vector<TermPtr>& terms, const std::string& path) {
  for (const TermPtr& t : terms) GANTRY_CHECK(t != nullptr, path, ": the objective term's factory returned nothing");
}

}  // namespace

void register_objective_term(const std::string& name, std::span<const ConfigKey> keys, ObjectiveTermFactory factory) {
  term_registry().add(name, std::move(factory), keys);
}
void register_objective_term(const std::string& name, std::span<const ConfigKey> keys, SingleTermFactory factory) {
  term_registry().add(name, of_one(std::move(factory)), keys);
}
void register_objective_term(const std::string& name, SingleTermFactory factory) {
  term_registry().add(name, of_one(std::move(factory)));
}

std::vector<std::string> objective_term_names() { return term_registry().names(); }

std::vector<std::pair<std::string, std::span<const ConfigKey>>> objective_term_keys() {
  return term_registry().declared_keys();
}

std::vector<TermPtr> make_objective_terms(nlohmann::json& config, const std::string& path, TermContext& context) {
  std::vector<TermPtr> terms = term_registry().build(config, path, {}, {}, context);
  check_built(terms, path);
  return terms;
}

std::vector<TermPtr> make_builtin_terms(const std::string& name, nlohmann::json& config, const std::string& path,
                                        TermContext& context) {
  JsonReader reader(config, path);
  std::vector<TermPtr> terms = make_builtin_terms(name, reader, context);
  reader.finish();
  return terms;
}

std::vector<TermPtr> make_builtin_terms(const std::string& name, JsonReader& reader, TermContext& context) {
  const auto entry = term_registry().entry(name);
  reader.add_keys(entry.keys);
  std::vector<TermPtr> terms = entry.factory(reader, context);
  check_built(terms, reader.key_path(name));
  return terms;
}

TermPtr make_objective_term(nlohmann::json& config, const std::string& path, TermContext context) {
  std::vector<TermPtr> terms = make_objective_terms(config, path, context);
  GANTRY_CHECK(terms.size() == 1, path, ": expected one objective term, found ", terms.size());
  return terms[0];
}

}  // namespace gantry::gan
