// The test oracle as a Backend: every operation of the op table (Note [backend op table]) as a
// naive loop over plain host memory, sums in double, so the core ops run on it unchanged,
// autograd and double backward included. The parity harness (tests/support/op_harness.h)
// installs it in front of the CPU backend (a backend layer, Note [backend layers]) to get the
// values a CPU or CUDA result is held to. Memory comes from the backend beneath it. Never used
// outside tests; nothing here is fast.
#pragma once

#include "backend/backend_layer.h"

namespace gantry::reference {

class ReferenceBackend final : public ForwardingBackend {
 public:
  explicit ReferenceBackend(Backend& host) : ForwardingBackend(host) {}
  std::string name() const override { return "reference"; }
  std::string conv_math_unavailable(ConvMath math) const override;  // f32 only
  int channel_block() const override { return 0; }  // plain NCHW only

#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) ReturnType name parameters override;
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

}  // namespace gantry::reference
