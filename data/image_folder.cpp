#include "data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "base/threads.h"
#include "data/dataset_json.h"

namespace gantry::data {

namespace fs = std::filesystem;

namespace {

bool is_image_file(const fs::path& p) { return has_image_extension(p.filename().string()); }

std::string read_file_bytes(const fs::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  GANTRY_CHECK(in.good(), what, " ", path.string(), ": cannot open it for reading");
  const std::streamoff size = in.tellg();
  GANTRY_CHECK(size >= 0, what, " ", path.string(), ": cannot tell its size");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  GANTRY_CHECK(in.good() || bytes.empty(), what, " ", path.string(), ": cannot read its ", bytes.size(), " bytes");
  return bytes;
}

// Image files under `dir`, recursively, sorted so the order does not depend on the file system.
std::vector<std::string> list_images(const fs::path& dir) {
  std::vector<std::string> out;
  // Symlinked sub-folders are not followed: a link cycle would never end.
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && is_image_file(entry.path()))
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs f(i) for i in [0, n) on a few threads.
template <typename F>
void parallel_for_each(int64_t n, F f) {
  int workers = static_cast<int>(std::min<int64_t>(std::max(1, num_threads()), n));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

Tensor decode_image_file(const std::string& path, ColorMode color) {
  const std::string bytes = read_file_bytes(path, "image file");
  return decode_image_bytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "file " + path, color);
}

ImageFolderDataset::ImageFolderDataset(std::string root, ImageFolderOptions options)
    : root_(std::move(root)), options_(options) {
  fs::path dir(root_);
  GANTRY_CHECK(fs::is_directory(dir), "image folder ", root_,
               ": expected an existing directory, found ",
               fs::exists(dir) ? "something that is not a directory" : "nothing");
  std::vector<fs::path> class_dirs;
  std::vector<std::string> root_images;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory())
      class_dirs.push_back(entry.path());
    else if (entry.is_regular_file() && is_image_file(entry.path()))
      root_images.push_back(entry.path().string());
  }
  if (fs::is_regular_file(dir / kDatasetJsonName)) {
    files_ = list_images(dir);
    std::vector<std::string> relative;
    for (const std::string& f : files_) relative.push_back(fs::path(f).lexically_relative(dir).generic_string());
    const fs::path json = dir / kDatasetJsonName;
    auto labels = labels_from_dataset_json(read_file_bytes(json, "labels file"), relative,
                                           "image folder " + root_ + ", labels file " + json.string());
    if (labels) labels_ = std::move(*labels);
  } else if (class_dirs.empty()) {
    files_ = list_images(dir);
  } else {
    GANTRY_CHECK(root_images.empty(), "image folder ", root_,
                 ": expected images only inside the class sub-folders, found ", root_images.front(),
                 " at the top level");
    std::sort(class_dirs.begin(), class_dirs.end());
    for (const fs::path& class_dir : class_dirs) {
      std::vector<std::string> images = list_images(class_dir);
      GANTRY_CHECK(!images.empty(), "image folder ", root_, ": expected images in class folder ",
                   class_dir.string(), ", found none (PNG, JPEG and BMP are read)");
      int64_t label = static_cast<int64_t>(classes_.size());
      classes_.push_back(class_dir.filename().string());
      for (auto& f : images) {
        files_.push_back(std::move(f));
        labels_.push_back(label);
      }
    }
  }
  GANTRY_CHECK(!files_.empty(), "image folder ", root_,
               ": expected image files (PNG, JPEG, BMP), found none");
  num_classes_ = !classes_.empty()  ? static_cast<int64_t>(classes_.size())
                 : !labels_.empty() ? *std::max_element(labels_.begin(), labels_.end()) + 1
                                    : 0;

  const bool decode_now =
      options_.cache || options_.verify || options_.on_error == DecodeErrorPolicy::Skip;
  if (!decode_now) {
    // Cheap early check of the signatures; full decoding happens in get().
    for (const auto& f : files_) {
      char head[8] = {};
      std::ifstream(f, std::ios::binary).read(head, sizeof head);
      GANTRY_CHECK(has_image_signature({reinterpret_cast<const uint8_t*>(head), sizeof head}), "image file ", f,
                   ": expected a PNG, JPEG or BMP image, found no PNG, JPEG or BMP signature in its first bytes");
    }
    return;
  }
  std::vector<Tensor> decoded(files_.size());
  std::vector<std::string> errors(files_.size());
  parallel_for_each(static_cast<int64_t>(files_.size()), [&](int64_t i) {
    try {
      decoded[i] = decode_image_file(files_[i], options_.color);
    } catch (const Error& e) {
      errors[i] = e.what();
    }
  });
  std::vector<std::string> kept_files;
  std::vector<int64_t> kept_labels;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (!errors[i].empty()) {
      if (options_.on_error == DecodeErrorPolicy::Error) throw Error(errors[i]);
      std::cerr << "warning: image folder " << root_ << ": skipping " << files_[i] << ": "
                << errors[i] << "\n";
      skipped_.push_back(files_[i]);
      continue;
    }
    kept_files.push_back(files_[i]);
    if (!labels_.empty()) kept_labels.push_back(labels_[i]);
    if (options_.cache) cache_.push_back(std::move(decoded[i]));
  }
  files_ = std::move(kept_files);
  labels_ = std::move(kept_labels);
  GANTRY_CHECK(!files_.empty(), "image folder ", root_, ": expected decodable images, found none (",
               skipped_.size(), " skipped)");
}

Example ImageFolderDataset::get(int64_t index) const {
  detail::check_index(index, size(), "image folder " + root_);
  Example ex;
  ex.image =
      options_.cache ? cache_[index].clone() : decode_image_file(files_[index], options_.color);
  if (!labels_.empty()) ex.label = labels_[index];
  ex.index = index;
  return ex;
}

std::string ImageFolderDataset::describe() const {
  return gantry::detail::concat(
      "image_folder(", root_, ", ", files_.size(), " images",
      num_classes_ == 0 ? std::string() : ", " + std::to_string(num_classes_) + " classes", ")");
}

}  // namespace gantry::data
