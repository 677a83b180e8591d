// A list of positive integers, one per stage or resolution of a built-in network (resnet's
// channel_multipliers, r3gan's widths, blocks_per_stage and cardinality): how many the network
// has depends on the image size, so the declaration has no default and the reader computes it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_key.h"
#include "core/json_reader.h"

namespace gantry::gan {

// The declaration of such a key (its docs/config.md default given by .documented_default).
constexpr ConfigKey stage_sizes_key(std::string_view name, std::string_view doc) {
  return array_key(name, "", doc).expecting("a non-empty list of integers");
}

// Reads it, `computed_default` written back when missing: as many positive integers as that
// holds, else "path.key: expected N positive integers (<order>)".
std::vector<int64_t> read_stage_sizes(JsonReader& r, std::string_view key, const std::vector<int64_t>& computed_default,
                                      const std::string& order);

}  // namespace gantry::gan
