// gan_bench's reference models: run configs (bench/configs/<model>.json, docs/config.md's keys)
// resolved by the code gan_train resolves its configs with, so a bench model is exactly what that
// config trains. CMake compiles the files' text into gan_bench (apps/CMakeLists.txt), so the
// binary runs where the source tree is not (scripts/pack_device_bundle ships it alone).
#pragma once

#include <span>
#include <string>

namespace gantry::bench {

struct ReferenceModel {
  const char* name;    // --model
  const char* path;    // the file it came from, relative to the repository (for errors)
  const char* config;  // its JSON text
};

// The models in --model's order; defined in the generated bench/reference_models.cpp.
std::span<const ReferenceModel> reference_models();

}  // namespace gantry::bench
