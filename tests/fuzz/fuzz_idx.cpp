// libFuzzer target: IDX files (data/idx.h; MNIST / Fashion-MNIST), plain or gzip-compressed
// (told apart by content, so the same bytes exercise both paths when they start with the gzip
// magic). Reads each input as images and as labels, as load_idx_dataset does.
#include "data/idx.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_idx");
  std::string path = dir.write("input-idx-ubyte", data, size);
  gantry::fuzz::expect_clean_rejection("fuzz_idx", [&] {
    gantry::Tensor images = gantry::data::read_idx_images(path);
    if (images.shape().rank() != 4) std::abort();
  });
  gantry::fuzz::expect_clean_rejection("fuzz_idx", [&] {
    gantry::Tensor labels = gantry::data::read_idx_labels(path);
    if (labels.shape().rank() != 1) std::abort();
  });
  return 0;
}
