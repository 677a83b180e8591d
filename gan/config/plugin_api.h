// The plugin API: a shared library that adds generators, discriminators or losses to Gantry's
// registries by name. It exports two C functions, written for you by GANTRY_PLUGIN:
//
//   #include "gan/config/plugin_api.h"
//   #include "gan/networks/network_registry.h"
//   GANTRY_PLUGIN() {
//     gantry::gan::register_generator("my_gen", [](gantry::JsonReader& r, const gantry::gan::NetworkContext& c) {...});
//   }
//
// A config lists plugins explicitly ("plugins": ["path/libmy.so"]); a plugin built against
// another API version is refused with a message naming both versions.
#pragma once

#define GANTRY_PLUGIN_API_VERSION 4

#define GANTRY_PLUGIN()                                                              \
  extern "C" int gantry_plugin_api_version() { return GANTRY_PLUGIN_API_VERSION; }   \
  static void gantry_plugin_register_impl();                                         \
  extern "C" void gantry_plugin_register() { gantry_plugin_register_impl(); }        \
  static void gantry_plugin_register_impl()
