// libFuzzer target: NumPy .npy arrays (core/npy.h), which users hand to gan_sample (noise) and
// the .npy datasets. An array that parses must round-trip: serialising and parsing it again
// gives the same dtype, shape and bytes.
#include <cstring>

#include "core/npy.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gantry::fuzz::expect_clean_rejection("fuzz_npy", [&] {
    gantry::Tensor t = gantry::nn::parse_npy(data, size, "fuzz.npy");
    std::vector<uint8_t> again = gantry::nn::serialize_npy(t);
    gantry::Tensor t2 = gantry::nn::parse_npy(again.data(), again.size(), "fuzz.npy (rewritten)");
    if (t.dtype() != t2.dtype() || t.shape() != t2.shape() || t.nbytes() != t2.nbytes() ||
        (t.nbytes() && std::memcmp(t.raw_data(), t2.raw_data(), t.nbytes()) != 0))
      std::abort();
  });
  return 0;
}
