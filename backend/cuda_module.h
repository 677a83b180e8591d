// The CUDA backend is a shared library (libgantry_cuda.so: backend/cuda/ and distribute/nccl/,
// linked against the CUDA runtime, cuBLAS, cuDNN and NCCL) that the registry opens the first
// time a CUDA device is asked for, as ggml and ONNX Runtime load theirs. A CPU run of a CUDA
// build therefore never maps those libraries (~200 MB of resident memory), and a missing or
// broken CUDA installation is an error only when CUDA is requested.
//
// The module's undefined Gantry symbols (errors, shapes, the Backend and Communicator bases)
// resolve against the executable that opens it, which exports every layer's symbols (CMake's
// gantry_link_layer_objects). A process that already contains the backend (the GPU tests link
// it in) uses that copy instead of opening a second one.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/input_stager.h"

namespace gantry {

// Bumped whenever CudaModuleApi or anything the module shares with its host changes shape; the
// loader refuses a module reporting another value.
inline constexpr int kCudaModuleAbi = 2;

// What the module exports, as `extern "C" const CudaModuleApi* gantry_cuda_module_api()`
// (backend/cuda/module_entry.cpp).
struct CudaModuleApi {
  int abi = 0;
  const char* gantry_version = "";  // must equal the host's (GANTRY_VERSION_STRING)
  int (*device_count_or_zero)() = nullptr;
  // Why the count is 0 when CUDA's device query failed, else "" (Note [no device on a GPU machine]).
  const char* (*device_query_error)() = nullptr;
  Backend& (*backend)() = nullptr;
  std::shared_ptr<InputStager> (*make_pinned_stager)(int device) = nullptr;
};

// The module's API, opening it on first use. Throws, naming every file tried and why it could
// not be used, when the build has no CUDA backend or the module cannot be loaded.
const CudaModuleApi& cuda_module();
// Whether cuda_module() succeeds (opening the module if needed); never throws. On false, `why`
// (if given) receives the error cuda_module() would throw.
bool cuda_module_available(std::string* why = nullptr);
// Whether the module has been opened (or found linked in) by this process: never opens it.
bool cuda_module_loaded();
// Another entry point of the module, for layers above the backend (distribute's NCCL groups);
// opens the module like cuda_module() and throws if it lacks the symbol.
void* cuda_module_symbol(const char* name);

// Defined by backend/registry.cpp, the one place that knows how the build was configured: the
// module's file name, or null when the build has no CUDA backend; and the installed copy's path.
const char* cuda_module_file_name();
const char* cuda_module_install_path();

}  // namespace gantry
