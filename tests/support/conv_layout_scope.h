// Sets the CPU backend's convolution layout policy (Note [conv layout]) for a scope and restores
// the previous one. Test support only.
#pragma once

#include "backend/cpu/onednn_context.h"

namespace gantry::testing {

class ConvLayoutScope {
 public:
  explicit ConvLayoutScope(cpu::ConvLayout layout) : previous_(cpu::conv_layout()) {
    cpu::set_conv_layout(layout);
  }
  ~ConvLayoutScope() { cpu::set_conv_layout(previous_); }
  ConvLayoutScope(const ConvLayoutScope&) = delete;
  ConvLayoutScope& operator=(const ConvLayoutScope&) = delete;

 private:
  cpu::ConvLayout previous_;
};

}  // namespace gantry::testing
