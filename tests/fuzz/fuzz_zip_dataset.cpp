// libFuzzer target: ZIP datasets (data/zip_dataset.h; libzip for the archive, OpenCV for the
// members, data/dataset_json.h for the labels). The first byte picks the colour mode and how
// many libzip handles the archive may open, the rest is the archive. Opening it and reading a
// few members must either work (images (C, H, W) with the channel count the mode promises,
// labels in [0, num_classes)) or fail with a gantry::Error.
#include <algorithm>
#include <span>

#include "data/zip_dataset.h"
#include "fuzz_support.h"

namespace {
const gantry::data::ColorMode kModes[] = {gantry::data::ColorMode::AsStored, gantry::data::ColorMode::Gray,
                                          gantry::data::ColorMode::Rgb, gantry::data::ColorMode::Unchanged};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_zip");
  const uint8_t selector = data[0];
  const std::string path = dir.write("dataset.zip", data + 1, size - 1);
  gantry::fuzz::expect_clean_rejection("fuzz_zip_dataset", [&] {
    gantry::data::ZipDatasetOptions options;
    options.color = kModes[selector & 3];
    options.max_handles = 1 + ((selector >> 2) & 1);
    gantry::data::ZipDataset zip(path, options);
    if (zip.size() <= 0) std::abort();
    if (zip.has_labels() && static_cast<int64_t>(zip.labels().size()) != zip.size()) std::abort();
    for (int64_t i = 0; i < std::min<int64_t>(zip.size(), 4); ++i) {
      gantry::data::Example ex = zip.get(i);
      const int64_t c = ex.image.shape().rank() == 3 ? ex.image.shape()[0] : -1;
      const bool channels_ok = options.color == gantry::data::ColorMode::Gray ? c == 1
                               : options.color == gantry::data::ColorMode::Rgb ? c == 3
                               : options.color == gantry::data::ColorMode::AsStored ? (c == 1 || c == 3)
                                                                                    : (c == 1 || c == 3 || c == 4);
      if (!channels_ok) std::abort();
      if (ex.label && (*ex.label < 0 || *ex.label >= zip.num_classes())) std::abort();
    }
  });
  return 0;
}
