// libFuzzer target: image files read through the image-folder data source (data/image_folder.h,
// decoded by OpenCV) and PNG headers (data/png_header.h). The first byte picks the file's
// extension and the colour mode, the rest is the file. A decoded image must be (C, H, W) with
// the channel count the mode promises.
#include <span>

#include "data/image_folder.h"
#include "data/png_header.h"
#include "fuzz_support.h"

namespace {
const char* const kNames[] = {"image.png", "image.jpg", "image.bmp", "image.jpeg"};
const gantry::data::ColorMode kModes[] = {gantry::data::ColorMode::AsStored,
                                          gantry::data::ColorMode::Gray, gantry::data::ColorMode::Rgb};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_image");
  const uint8_t selector = data[0];
  std::span<const uint8_t> file(data + 1, size - 1);
  const gantry::data::ColorMode mode = kModes[(selector >> 2) % 3];

  gantry::fuzz::expect_clean_rejection("fuzz_image_decode", [&] {
    gantry::data::PngHeader h = gantry::data::read_png_header(file, "fuzz.png");
    if (h.width <= 0 || h.height <= 0 || h.channels < 1 || h.channels > 4) std::abort();
  });

  std::filesystem::remove_all(dir.path() / "folder");
  dir.write(std::string("folder/") + kNames[selector & 3], file.data(), file.size());
  gantry::fuzz::expect_clean_rejection("fuzz_image_decode", [&] {
    gantry::data::ImageFolderOptions options;
    options.color = mode;
    options.verify = (selector & 0x40) != 0;  // decode while opening, else in get()
    gantry::data::ImageFolderDataset folder((dir.path() / "folder").string(), options);
    gantry::Tensor image = folder.get(0).image;  // (C, H, W) u8
    const int64_t c = image.shape().rank() == 3 ? image.shape()[0] : -1;
    const bool channels_ok = mode == gantry::data::ColorMode::Gray  ? c == 1
                             : mode == gantry::data::ColorMode::Rgb ? c == 3
                                                                     : (c == 1 || c == 3);
    if (!channels_ok) std::abort();
  });
  return 0;
}
