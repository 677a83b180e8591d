// libFuzzer target: safetensors files (nn/safetensors.h), the format of every state file.
// A file that parses must also survive a round trip: serialising what was read and parsing
// that gives the same names, dtypes, shapes and bytes.
#include <cstring>

#include "fuzz_support.h"
#include "nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gantry::fuzz::expect_clean_rejection("fuzz_safetensors", [&] {
    gantry::nn::SafetensorsContents parsed = gantry::nn::parse_safetensors(data, size, "fuzz.safetensors");
    std::vector<uint8_t> again = gantry::nn::serialize_safetensors(parsed.tensors, parsed.metadata);
    gantry::nn::SafetensorsContents reparsed =
        gantry::nn::parse_safetensors(again.data(), again.size(), "fuzz.safetensors (rewritten)");
    if (reparsed.tensors.size() != parsed.tensors.size() || reparsed.metadata != parsed.metadata) std::abort();
    for (size_t i = 0; i < parsed.tensors.size(); ++i) {
      const auto& [name, t] = parsed.tensors[i];
      const auto& [name2, t2] = reparsed.tensors[i];
      if (name != name2 || t.dtype() != t2.dtype() || t.shape() != t2.shape() || t.nbytes() != t2.nbytes() ||
          (t.nbytes() && std::memcmp(t.raw_data(), t2.raw_data(), t.nbytes()) != 0))
        std::abort();
    }
  });
  return 0;
}
