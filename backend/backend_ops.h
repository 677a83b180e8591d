// Names for the operations of the Backend interface, from its op table.
//
// Note [backend op table]: every operation of the Backend interface is one line of
// backend/backend_ops.def (return type, name, parameters, arguments), read with the X-macro
// GANTRY_BACKEND_OP. That one list yields Backend's pure virtual functions (backend.h), the
// declarations of the CPU and CUDA backends and of the test oracle (backend/cpu/reference/
// reference_backend.h), the pass-through of backend layers (backend/backend_layer.h) and
// BackendOp below, by which the parity harness (tests/support/op_harness.h) checks that each
// operation is reached by at least one of its cases. A new operation is one line there, its
// kernels in each backend and the oracle, its core op and its harness cases (docs/engine.md,
// "Defining an op").
#pragma once

#include <cstdint>
#include <iterator>

namespace gantry {

enum class BackendOp : uint8_t {
#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) name,
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

inline constexpr const char* kBackendOpNames[] = {
#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) #name,
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

inline constexpr int kBackendOpCount = static_cast<int>(std::size(kBackendOpNames));

}  // namespace gantry
