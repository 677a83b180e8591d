// The declaration of one config key, written once in a table next to the resolver that reads it
// (gan/config/*_config.cpp): its name, type, default, check, whether a resume may change it and one line
// of doc. JsonReader reads a declared key through its declaration, so the default and the check
// live only there; the resume check (gan/config/config_changes.h) and docs/config.md's key tables
// (tests/unit/test_config_docs.cpp) are derived from, or checked against, the same tables.
//
// A table is an array of keys built with the helpers below, e.g.
//   constexpr ConfigKey kTrainKeys[] = {
//       int_key("steps", "1000", "train until the global step reaches this").at_least(0),
//       int_key("seed", "0", "keys initialisation, noise, shuffling, flips and penalties").fixed(),
//       ...};
// and a section mounts a table at its JSON path (gan::run_config_sections(), gan/config/run_config.h).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace gantry {

enum class KeyType { Bool, Int, Number, String, Object, Array, Any };

// Fixed: a resume refuses a change of the key or of anything under it, because the checkpoint's
// state cannot follow it (the networks, the example stream, the seed, the optimizers' state).
enum class OnResume { MayChange, Fixed };

// Note [bound keys]: a declaration may name the field its value fills, `.into<&Options::steps>()`,
// or a setter `void set(Options&, const nlohmann::json&)` for a value that needs converting,
// `.into<&set>()`. A reader of the table then fills every bound key of one struct in the table's
// order (JsonReader::read_into), so a key is its declaration plus the code that uses the field,
// and no resolver copies it by hand. Keys read only with some values of a sibling (an EMA's
// "decay" with type "decay") stay unbound: reading them is the resolver's decision.
struct KeyBinding {
  const void* owner = nullptr;  // &detail::owner_tag<Options>: the struct it fills
  void (*assign)(void* options, const nlohmann::json& value) = nullptr;
};

namespace detail {
template <class Options>
inline constexpr char owner_tag = 0;  // its address names Options

template <class Pointer>
struct field_of;
template <class Options, class Field>
struct field_of<Field Options::*> {
  using owner = Options;
  using type = Field;
};
template <class Options>
struct setter_of;
template <class Options>
struct setter_of<void (*)(Options&, const nlohmann::json&)> {
  using owner = Options;
};

// A static member, not a lambda: clang 14 evaluates it in a constant expression.
template <auto kTarget>
struct Assign {
  static void field(void* options, const nlohmann::json& value) {
    using F = typename field_of<decltype(kTarget)>::type;
    auto& target = static_cast<typename field_of<decltype(kTarget)>::owner*>(options)->*kTarget;
    if constexpr (std::is_same_v<F, bool> || std::is_same_v<F, std::string>)
      target = value.get<F>();
    else if constexpr (std::is_integral_v<F>)
      target = static_cast<F>(value.get<int64_t>());  // checked integral (4.0 too) by the reader
    else
      target = static_cast<F>(value.get<double>());
  }
  static void setter(void* options, const nlohmann::json& value) {
    kTarget(*static_cast<typename setter_of<decltype(kTarget)>::owner*>(options), value);
  }
};

template <auto kTarget>
constexpr KeyBinding binding() {
  if constexpr (std::is_member_object_pointer_v<decltype(kTarget)>)
    return {&owner_tag<typename field_of<decltype(kTarget)>::owner>, &Assign<kTarget>::field};
  else
    return {&owner_tag<typename setter_of<decltype(kTarget)>::owner>, &Assign<kTarget>::setter};
}
}  // namespace detail

struct ConfigKey {
  std::string_view name = {};
  KeyType type = KeyType::Any;
  // The default as JSON text, written back when the key is missing. Empty: no one default (a
  // required key, an optional one, or a default the resolver computes; `doc_default` says which).
  std::string_view fallback = {};
  std::string_view doc = {};  // one line
  OnResume resume = OnResume::MayChange;
  // Int and Number keys: within [min, max], an open end where min_open / max_open.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  std::string_view choices = {};  // String keys: one of these, ", "-separated (empty: any string)
  // Number keys: an object is a schedule of the value over the run (Note [value schedules] in
  // nn/value_schedule.h; nn::read_value_schedule reads it), each of its values in the range.
  bool schedulable = false;
  std::string_view expected = {};  // the error's "expected ..." where the check's own wording is not enough
  // A default that depends on a sibling key read before it: `fallback` is then a JSON object
  // from the sibling's value (a string, or its JSON text) to the default, e.g. {"adam": 2e-4, ...}.
  std::string_view default_by = {};
  // docs/config.md's default cell where `fallback` does not give it ("required for idx/npy").
  std::string_view doc_default = {};
  KeyBinding bound = {};  // the field it fills (Note [bound keys]); none: the resolver reads it

  // Modifiers, each a copy with one more setting (written out: clang 14 cannot evaluate a
  // member template taking a lambda here in a constant expression).
  constexpr ConfigKey fixed() const {
    ConfigKey k = *this;
    k.resume = OnResume::Fixed;
    return k;
  }
  constexpr ConfigKey at_least(double lo) const {
    ConfigKey k = *this;
    k.min = lo;
    return k;
  }
  constexpr ConfigKey above(double lo) const {
    ConfigKey k = at_least(lo);
    k.min_open = true;
    return k;
  }
  constexpr ConfigKey in(double lo, double hi) const {
    ConfigKey k = at_least(lo);
    k.max = hi;
    return k;
  }
  constexpr ConfigKey below(double hi) const {
    ConfigKey k = *this;
    k.max = hi;
    k.max_open = true;
    return k;
  }
  constexpr ConfigKey scheduled() const {
    ConfigKey k = *this;
    k.schedulable = true;
    return k;
  }
  constexpr ConfigKey one_of(std::string_view list) const {
    ConfigKey k = *this;
    k.choices = list;
    return k;
  }
  constexpr ConfigKey expecting(std::string_view text) const {
    ConfigKey k = *this;
    k.expected = text;
    return k;
  }
  constexpr ConfigKey by(std::string_view sibling) const {
    ConfigKey k = *this;
    k.default_by = sibling;
    return k;
  }
  constexpr ConfigKey documented_default(std::string_view text) const {
    ConfigKey k = *this;
    k.doc_default = text;
    return k;
  }
  template <auto kTarget>
  constexpr ConfigKey into() const {
    ConfigKey k = *this;
    k.bound = detail::binding<kTarget>();
    return k;
  }
};

namespace detail {
template <KeyType kType>
constexpr ConfigKey typed_key(std::string_view name, std::string_view fallback, std::string_view doc) {
  ConfigKey k;
  k.name = name;
  k.type = kType;
  k.fallback = fallback;
  k.doc = doc;
  return k;
}
}  // namespace detail

// Each takes (name, default as JSON text, one line of doc).
inline constexpr auto bool_key = detail::typed_key<KeyType::Bool>;
inline constexpr auto int_key = detail::typed_key<KeyType::Int>;
inline constexpr auto number_key = detail::typed_key<KeyType::Number>;
inline constexpr auto string_key = detail::typed_key<KeyType::String>;
inline constexpr auto object_key = detail::typed_key<KeyType::Object>;
inline constexpr auto array_key = detail::typed_key<KeyType::Array>;
inline constexpr auto any_key = detail::typed_key<KeyType::Any>;

// A table of keys mounted at its JSON path: "train", "train.schedule", "" for the top level; a
// segment "*" stands for any one key ("optimizers.*": each optimizer), a trailing "[]" for each
// entry of an array ("hooks.metrics[]").
struct ConfigSection {
  std::string path;
  std::span<const ConfigKey> keys;
};

// "path.name" ("name" at the top level).
inline std::string key_path(const ConfigSection& section, const ConfigKey& key) {
  return section.path.empty() ? std::string(key.name) : section.path + "." + std::string(key.name);
}

}  // namespace gantry
