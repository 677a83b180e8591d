#include "backend/cuda_module.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "base/error.h"

namespace gantry {

namespace {

struct LoadedModule {
  const CudaModuleApi* api = nullptr;
  void* handle = nullptr;  // RTLD_DEFAULT when linked into the executable
  std::string error;       // why it could not be loaded (api == nullptr)
};

// Where to look, in order: $GANTRY_CUDA_MODULE; next to the executable's directory (build/lib
// for build/apps and build/tests, <prefix>/lib for <prefix>/bin); the installed path; the bare
// name, for the dynamic loader's search path.
std::vector<std::string> candidate_paths(const char* file) {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("GANTRY_CUDA_MODULE"); env != nullptr && *env != '\0') {
    paths.emplace_back(env);
    return paths;  // an explicit choice is the only one tried
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((exe.parent_path().parent_path() / "lib" / file).string());
  if (const char* installed = cuda_module_install_path(); installed != nullptr && *installed != '\0')
    paths.emplace_back(installed);
  paths.emplace_back(file);
  return paths;
}

std::string check_api(const CudaModuleApi* api) {
  if (api == nullptr) return "gantry_cuda_module_api() returned null";
  if (api->abi != kCudaModuleAbi)
    return detail::concat("module ABI ", api->abi, ", this Gantry expects ", kCudaModuleAbi);
  if (std::string(api->gantry_version) != GANTRY_VERSION_STRING)
    return detail::concat("module of Gantry ", api->gantry_version, ", this is Gantry ", GANTRY_VERSION_STRING);
  return "";
}

LoadedModule load() {
  using Entry = const CudaModuleApi* (*)();
  LoadedModule m;
  // Linked in (the GPU tests): one backend per process, so never open a second copy.
  if (auto entry = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gantry_cuda_module_api"))) {
    m.api = entry();
    m.handle = RTLD_DEFAULT;
    return m;
  }
  const char* file = cuda_module_file_name();
  if (file == nullptr) {
    m.error = "this build of Gantry has no CUDA backend (configure with -DGANTRY_CUDA=ON)";
    return m;
  }
  std::string tried;
  for (const std::string& path : candidate_paths(file)) {
    // RTLD_NOW: every symbol resolves here, so a broken installation fails now with the
    // loader's message instead of at some later call.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried += detail::concat("\n  ", path, ": ", err != nullptr ? err : "dlopen failed");
      continue;
    }
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "gantry_cuda_module_api"));
    const std::string bad = entry == nullptr ? "it exports no gantry_cuda_module_api" : check_api(entry());
    if (!bad.empty()) {
      tried += detail::concat("\n  ", path, ": ", bad);
      dlclose(handle);
      continue;
    }
    m.api = entry();
    m.handle = handle;
    return m;
  }
  m.error = detail::concat("the CUDA backend module ", file, " could not be loaded; tried:", tried,
                           "\n(set GANTRY_CUDA_MODULE to its path, or check that the CUDA runtime, "
                           "cuBLAS, cuDNN and NCCL libraries are installed)");
  return m;
}

// Published once the module is loaded (or has failed to), for cuda_module_loaded().
std::atomic<const LoadedModule*> published{nullptr};

// Loaded on first use, once per process (a failure is remembered too: it will not change). Every
// CUDA allocation asks the registry for the backend, so after the first call this is one guard
// check: no lock, no allocation.
const LoadedModule& module() {
  static const LoadedModule m = load();
  static const bool done = (published.store(&m, std::memory_order_release), true);
  (void)done;
  return m;
}

}  // namespace

const CudaModuleApi& cuda_module() {
  const LoadedModule& m = module();
  GANTRY_CHECK(m.api != nullptr, m.error);
  return *m.api;
}

bool cuda_module_available(std::string* why) {
  const LoadedModule& m = module();
  if (m.api == nullptr && why != nullptr) *why = m.error;
  return m.api != nullptr;
}

bool cuda_module_loaded() {
  const LoadedModule* m = published.load(std::memory_order_acquire);
  return m != nullptr && m->api != nullptr;
}

void* cuda_module_symbol(const char* name) {
  cuda_module();  // throws why the module is unavailable
  void* symbol = dlsym(module().handle, name);
  GANTRY_CHECK(symbol != nullptr, "the CUDA backend module exports no ", name,
               " (a module from another Gantry build?)");
  return symbol;
}

}  // namespace gantry
