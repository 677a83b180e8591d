// A folder of images (PNG, JPEG, BMP; decoded by OpenCV). With a top-level dataset.json
// (StyleGAN's labels convention, data/dataset_json.h) every image below the folder is read and
// labelled from it; otherwise, with one sub-folder per class (searched recursively), labels are
// the classes' indices in sorted name order, as torchvision's ImageFolder; a folder with no
// sub-folders gives unlabelled images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_decode.h"

namespace gantry::data {

enum class DecodeErrorPolicy {
  Error,  // an undecodable file is an error naming it
  Skip,   // warn on stderr and leave the file out; see ImageFolderDataset::skipped()
};

struct ImageFolderOptions {
  ColorMode color = ColorMode::AsStored;
  DecodeErrorPolicy on_error = DecodeErrorPolicy::Error;
  // Decode every file while opening the folder (always done with the Skip policy, which must
  // know the good files up front). Without it only file signatures are checked there and a
  // file that fails to decode later is an error from get().
  bool verify = false;
  // Keep decoded images in memory (decoded while opening).
  bool cache = false;
};

class ImageFolderDataset : public Dataset {
 public:
  explicit ImageFolderDataset(std::string root, ImageFolderOptions options = {});

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index) const override;  // image (C, H, W) u8
  bool has_labels() const override { return !labels_.empty(); }
  std::string describe() const override;

  // Class sub-folder names (sorted; label = index); empty when unlabelled or labelled by dataset.json.
  const std::vector<std::string>& classes() const { return classes_; }
  // 1 + the largest label (class sub-folders: their count); 0 when unlabelled.
  int64_t num_classes() const { return num_classes_; }
  const std::vector<int64_t>& labels() const { return labels_; }  // per file, or empty
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<std::string>& skipped() const { return skipped_; }  // Skip policy only
  int64_t num_skipped() const { return static_cast<int64_t>(skipped_.size()); }

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;  // per file, when labelled
  int64_t num_classes_ = 0;
  std::vector<std::string> skipped_;
  std::vector<Tensor> cache_;
};

// Decodes one image file into (C, H, W) u8, or throws naming the file.
Tensor decode_image_file(const std::string& path, ColorMode color);

}  // namespace gantry::data
