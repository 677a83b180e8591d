// Backend layers: a Backend put in front of the one backend_for gives for a device kind.
//
// Note [backend layers]: while a ScopedBackendLayer holds it, backend_for gives the layer for
// every device of its kind; the layer passes what it does not change on to the backend that was
// there before it (ForwardingBackend, whose pass-through comes from the op table, Note [backend
// op table]). gan_bench records the step's convolutions this way (ConvRecorder, Note [conv
// roofline]) and the op harness runs its cases on the reference oracle and with NaN-filled
// allocations, so no production code path carries a profiling or testing branch. Install and
// remove a layer while nothing runs on its kind (before or between steps): backend_for reads
// the slot without a lock. A layer never owns memory: allocations go to the backend beneath, so
// a tensor may outlive the layer it was made under.
#pragma once

#include "backend/backend.h"

namespace gantry {

// Passes every call on to `inner`: the base of a layer, which overrides what it watches or
// replaces.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  DeviceKind kind() const override { return inner_.kind(); }
  std::string name() const override { return inner_.name(); }
  int device_count() const override { return inner_.device_count(); }
  std::string describe() const override { return inner_.describe(); }
  std::string conv_math_unavailable(ConvMath math) const override { return inner_.conv_math_unavailable(math); }
  int channel_block() const override { return inner_.channel_block(); }
  void synchronize(Device device) override { inner_.synchronize(device); }
  size_t peak_allocated_bytes(Device device) override { return inner_.peak_allocated_bytes(device); }

#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) \
  ReturnType name parameters override { return inner_.name arguments; }
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP

 protected:
  Backend& inner() const { return inner_; }

 private:
  Backend& inner_;
};

// While alive, backend_for gives `layer` for every device of `kind` (Note [backend layers]);
// the destructor puts back what was there.
class ScopedBackendLayer {
 public:
  ScopedBackendLayer(DeviceKind kind, Backend& layer);
  ~ScopedBackendLayer();
  ScopedBackendLayer(const ScopedBackendLayer&) = delete;
  ScopedBackendLayer& operator=(const ScopedBackendLayer&) = delete;

 private:
  DeviceKind kind_;
  Backend* previous_;
};

}  // namespace gantry
