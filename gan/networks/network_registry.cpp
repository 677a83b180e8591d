#include "gan/networks/network_registry.h"

#include "core/named_registry.h"
#include "gan/networks/dcgan.h"
#include "gan/networks/r3gan.h"
#include "gan/networks/resnet.h"
#include "gan/networks/sequential_network.h"
#include "gan/networks/stylegan2_discriminator.h"
#include "gan/networks/stylegan2_generator.h"
#include "gan/networks/transformer.h"

namespace gantry::gan {

namespace {

NamedRegistry<NetworkFactory>& generators() {
  static NamedRegistry<NetworkFactory>* r = [] {
    auto* reg = new NamedRegistry<NetworkFactory>("generator");
    reg->add("dcgan", dcgan_generator, dcgan_generator_keys());
    reg->add(
        "sequential", [](JsonReader& c, const NetworkContext& ctx) { return sequential_network(c, ctx, true); },
        sequential_generator_keys());
    reg->add("stylegan2", stylegan2_generator, stylegan2_generator_keys());
    reg->add("resnet", resnet_generator, resnet_generator_keys());
    reg->add("r3gan", r3gan_generator, r3gan_generator_keys());
    reg->add("transformer", transformer_generator, transformer_generator_keys());
    return reg;
  }();
  return *r;
}

NamedRegistry<NetworkFactory>& discriminators() {
  static NamedRegistry<NetworkFactory>* r = [] {
    auto* reg = new NamedRegistry<NetworkFactory>("discriminator");
    // One network, two entries: wgan_critic's keys default "norm" to layer norm.
    reg->add("dcgan", dcgan_discriminator, dcgan_discriminator_keys());
    reg->add("wgan_critic", dcgan_discriminator, wgan_critic_keys());
    reg->add(
        "sequential", [](JsonReader& c, const NetworkContext& ctx) { return sequential_network(c, ctx, false); },
        sequential_discriminator_keys());
    reg->add("stylegan2", stylegan2_discriminator, stylegan2_discriminator_keys());
    reg->add("resnet", resnet_discriminator, resnet_discriminator_keys());
    reg->add("r3gan", r3gan_discriminator, r3gan_discriminator_keys());
    reg->add("transformer", transformer_discriminator, transformer_discriminator_keys());
    return reg;
  }();
  return *r;
}

}  // namespace

void register_generator(const std::string& name, std::span<const ConfigKey> keys, NetworkFactory f) {
  generators().add(name, std::move(f), keys);
}
void register_discriminator(const std::string& name, std::span<const ConfigKey> keys, NetworkFactory f) {
  discriminators().add(name, std::move(f), keys);
}
void register_generator(const std::string& name, NetworkFactory f) { generators().add(name, std::move(f)); }
void register_discriminator(const std::string& name, NetworkFactory f) { discriminators().add(name, std::move(f)); }
std::vector<std::string> generator_names() { return generators().names(); }
std::vector<std::string> discriminator_names() { return discriminators().names(); }
std::vector<std::pair<std::string, std::span<const ConfigKey>>> generator_keys() { return generators().declared_keys(); }
std::vector<std::pair<std::string, std::span<const ConfigKey>>> discriminator_keys() {
  return discriminators().declared_keys();
}

BuiltNetwork make_generator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx) {
  return generators().build(config, path, {}, {}, ctx);
}
BuiltNetwork make_discriminator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx) {
  return discriminators().build(config, path, {}, {}, ctx);
}

}  // namespace gantry::gan
