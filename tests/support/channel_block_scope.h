// Forces the CPU backend's channel block (Note [channel block] in backend/cpu/onednn_context.h)
// to 8 or 16 for a scope and restores the CPU's own afterwards, so the blocked loops run at the
// block size this CPU does not use. Test support only.
#pragma once

#include "backend/cpu/onednn_context.h"

namespace gantry::testing {

class ChannelBlockScope {
 public:
  explicit ChannelBlockScope(int block) { cpu::set_channel_block_for_testing(block); }
  ~ChannelBlockScope() { cpu::set_channel_block_for_testing(0); }
  ChannelBlockScope(const ChannelBlockScope&) = delete;
  ChannelBlockScope& operator=(const ChannelBlockScope&) = delete;
};

}  // namespace gantry::testing
