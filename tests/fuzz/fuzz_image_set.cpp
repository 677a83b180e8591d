// libFuzzer target: gan_eval's --real/--fake files and the Python package's arrays
// (jobs/run_metrics.h): the input as a .npy file read by jobs::image_set_from_path, and the array
// it parses to handed to jobs::image_set_from_array, as gantry.metrics hands NumPy arrays. One
// check serves both (metrics::check_image_set): an f32 array is accepted from a file exactly when
// it is accepted as an array, and what is accepted is (N, C, H, W) f32, finite, in [-1, 1].
#include <cmath>

#include "core/npy.h"
#include "fuzz_support.h"
#include "jobs/run_metrics.h"

namespace {

using namespace gantry;

void check_accepted(const jobs::ImageSet& set) {
  const Tensor& t = set.images;
  if (!t.defined() || t.dim() != 4 || t.dtype() != DType::F32 || t.numel() == 0) std::abort();
  for (float v : t.to_vector())
    if (!std::isfinite(v) || v < -1.01f || v > 1.01f) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir("gantry_fuzz_image_set");
  const std::string path = dir.write("images.npy", data, size);
  bool from_file = false;
  fuzz::expect_clean_rejection("fuzz_image_set", [&] {
    check_accepted(jobs::image_set_from_path(path, 0, "real", jobs::ArgumentStyle::CommandLine));
    from_file = true;
  });
  Tensor array;
  try {
    array = nn::parse_npy(data, size, "images.npy");
  } catch (const Error&) {
    return 0;  // fuzz_npy covers the parser
  }
  if (array.dtype() != DType::F32) return 0;  // a u8 file is scaled to f32 first; arrays are f32
  bool from_array = false;
  fuzz::expect_clean_rejection("fuzz_image_set", [&] {
    check_accepted(jobs::image_set_from_array(array, 0, "real", jobs::ArgumentStyle::Python));
    from_array = true;
  });
  if (from_file != from_array) std::abort();  // one check for both
  return 0;
}
