#include "data/zip_dataset.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "data/dataset_json.h"
#include "data/zip_archive.h"

namespace gantry::data {

ZipDataset::ZipDataset(std::string path, ZipDatasetOptions options)
    : path_(std::move(path)), options_(options), archive_(std::make_unique<ZipArchive>(path_, options.max_handles)) {
  const std::vector<std::string>& names = archive_->names();
  std::vector<size_t> order;
  for (size_t i = 0; i < names.size(); ++i)
    if (has_image_extension(names[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  for (size_t k = 1; k < order.size(); ++k)
    GANTRY_CHECK(names[order[k]] != names[order[k - 1]], "ZIP archive ", path_, ": member \"", names[order[k]],
                 "\" occurs twice");
  for (size_t i : order) {
    members_.push_back(names[i]);
    member_index_.push_back(i);
  }
  GANTRY_CHECK(!members_.empty(), "ZIP archive ", path_, ": expected image members (PNG, JPEG, BMP), found none among ",
               names.size(), " members");

  if (const int64_t json = archive_->find(kDatasetJsonName); json >= 0) {
    const std::vector<uint8_t> bytes = archive_->read(static_cast<size_t>(json));
    auto labels = labels_from_dataset_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                           members_, "ZIP archive " + path_ + ", member " + kDatasetJsonName);
    if (labels) labels_ = std::move(*labels);
  } else {
    // An archive of a folder (zip -r data.zip data/) has its dataset.json one level down: its labels
    // would be silently replaced by the one folder's, so say how to make it.
    std::string nested = "/";
    nested += kDatasetJsonName;
    for (const std::string& name : names)
      GANTRY_CHECK(!name.ends_with(nested), "ZIP archive ", path_, ": expected ", kDatasetJsonName,
                   " at the top of the archive, found it as member ", name, " (zip the folder's contents, not the "
                   "folder)");
    ClassFolders folders = class_folders_of(members_, "ZIP archive " + path_);
    classes_ = std::move(folders.classes);
    labels_ = std::move(folders.labels);
  }
  if (!labels_.empty()) num_classes_ = *std::max_element(labels_.begin(), labels_.end()) + 1;
  if (!classes_.empty()) num_classes_ = static_cast<int64_t>(classes_.size());
}

ZipDataset::~ZipDataset() = default;

Example ZipDataset::get(int64_t index) const {
  detail::check_index(index, size(), "ZIP archive " + path_);
  const std::vector<uint8_t> bytes = archive_->read(member_index_[static_cast<size_t>(index)]);
  Example ex;
  ex.image = decode_image_bytes(bytes, "ZIP archive " + path_ + ", member " + members_[static_cast<size_t>(index)],
                                options_.color);
  if (!labels_.empty()) ex.label = labels_[static_cast<size_t>(index)];
  ex.index = index;
  return ex;
}

std::string ZipDataset::describe() const {
  return gantry::detail::concat("zip(", path_, ", ", members_.size(), " images",
                                num_classes_ > 0 ? ", " + std::to_string(num_classes_) + " classes" : std::string(),
                                ")");
}

}  // namespace gantry::data
