// Test-only (tests/e2e/test_plugin.cpp): a plugin that reports another plugin API version, as
// one built against a different Gantry would. gan_train must refuse it before registering
// anything, so the registration function is never called.
#include <cstdio>
#include <cstdlib>

extern "C" int gantry_plugin_api_version() { return 999; }

extern "C" void gantry_plugin_register() {
  std::fputs("wrong_api_version: gantry_plugin_register must not be called\n", stderr);
  std::abort();
}
