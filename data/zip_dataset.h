// A ZIP archive of PNG/JPEG (and BMP) images, as StyleGAN2-ADA's datasets: image members in
// name order (so the order does not depend on how the archive was written), directories and
// other members ignored. Labels come from a top-level dataset.json (data/dataset_json.h) when
// there is one, else from class sub-folders as in image folders; otherwise none.
// get() reads and decodes one member and may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_decode.h"

namespace gantry::data {

class ZipArchive;

struct ZipDatasetOptions {
  ColorMode color = ColorMode::AsStored;
  int max_handles = 8;  // libzip handles open at once (data/zip_archive.h); 1 serialises reads
};

class ZipDataset : public Dataset {
 public:
  explicit ZipDataset(std::string path, ZipDatasetOptions options = {});
  ~ZipDataset() override;

  int64_t size() const override { return static_cast<int64_t>(members_.size()); }
  Example get(int64_t index) const override;  // image (C, H, W) u8
  bool has_labels() const override { return !labels_.empty(); }
  std::string describe() const override;

  const std::vector<std::string>& members() const { return members_; }  // image members, sorted
  const std::vector<int64_t>& labels() const { return labels_; }          // per member, or empty
  // 1 + the largest label (class sub-folders: their count); 0 when unlabelled.
  int64_t num_classes() const { return num_classes_; }
  // Class sub-folder names when the labels come from them, else empty.
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::string path_;
  ZipDatasetOptions options_;
  std::unique_ptr<ZipArchive> archive_;
  std::vector<std::string> members_;
  std::vector<size_t> member_index_;  // index into archive_->names()
  std::vector<int64_t> labels_;
  std::vector<std::string> classes_;
  int64_t num_classes_ = 0;
};

}  // namespace gantry::data
