#include "gan/networks/network_registry.h"

#include <map>
#include <mutex>

#include "gan/networks/dcgan.h"
#include "gan/networks/r3gan.h"
#include "gan/networks/resnet.h"
#include "gan/networks/sequential_network.h"
#include "gan/networks/stylegan2_discriminator.h"
#include "gan/networks/stylegan2_generator.h"

namespace gantry::gan {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, NetworkFactory> generators, discriminators;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->generators["dcgan"] = [](JsonReader& c, const NetworkContext& ctx) { return dcgan_generator(c, ctx); };
    reg->generators["sequential"] = [](JsonReader& c, const NetworkContext& ctx) { return sequential_network(c, ctx, true); };
    reg->discriminators["dcgan"] = [](JsonReader& c, const NetworkContext& ctx) { return dcgan_discriminator(c, ctx, "batch"); };
    reg->discriminators["wgan_critic"] = [](JsonReader& c, const NetworkContext& ctx) { return dcgan_discriminator(c, ctx, "layer"); };
    reg->discriminators["sequential"] = [](JsonReader& c, const NetworkContext& ctx) { return sequential_network(c, ctx, false); };
    reg->generators["stylegan2"] = [](JsonReader& c, const NetworkContext& ctx) { return stylegan2_generator(c, ctx); };
    reg->discriminators["stylegan2"] = [](JsonReader& c, const NetworkContext& ctx) { return stylegan2_discriminator(c, ctx); };
    reg->generators["resnet"] = resnet_generator;
    reg->discriminators["resnet"] = resnet_discriminator;
    reg->generators["r3gan"] = r3gan_generator;
    reg->discriminators["r3gan"] = r3gan_discriminator;
    return reg;
  }();
  return *r;
}

void add(std::map<std::string, NetworkFactory>& map, const std::string& name, NetworkFactory f, const char* what) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  GANTRY_CHECK(!map.count(name), what, " '", name, "' is already registered");
  map[name] = std::move(f);
}

std::vector<std::string> names(const std::map<std::string, NetworkFactory>& map) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> out;
  for (auto& [name, f] : map) out.push_back(name);
  return out;
}

BuiltNetwork build(std::map<std::string, NetworkFactory>& map, nlohmann::json& config,
                   const std::string& path, const NetworkContext& ctx, const char* what) {
  JsonReader reader(config, path);
  std::string type = reader.require_string("type");
  NetworkFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = map.find(type);
    if (it == map.end()) {
      std::string known;
      for (auto& [name, f] : map) known += (known.empty() ? "" : ", ") + name;
      GANTRY_FAIL(reader.key_path("type"), ": unknown ", what, " \"", type, "\" (known: ", known, ")");
    }
    factory = it->second;
  }
  BuiltNetwork b = factory(reader, ctx);
  reader.finish();
  return b;
}

}  // namespace

void register_generator(const std::string& name, NetworkFactory f) { add(registry().generators, name, std::move(f), "generator"); }
void register_discriminator(const std::string& name, NetworkFactory f) { add(registry().discriminators, name, std::move(f), "discriminator"); }
std::vector<std::string> generator_names() { return names(registry().generators); }
std::vector<std::string> discriminator_names() { return names(registry().discriminators); }

BuiltNetwork make_generator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx) {
  return build(registry().generators, config, path, ctx, "generator");
}
BuiltNetwork make_discriminator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx) {
  return build(registry().discriminators, config, path, ctx, "discriminator");
}

}  // namespace gantry::gan
