// Small ZIP archives for the data tests and the fuzz seed corpus, written with libzip directly
// (not through data/zip_writer.h, so the reader is checked against archives it did not make):
// members in the given order, deflate-compressed or stored, and directory entries.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

namespace gantry::testing {

struct ZipMember {
  std::string name;  // a name ending in '/' is a directory entry (content ignored)
  std::string content;
  bool compress = true;  // deflate, else stored
};

// Writes `members` to a new ZIP archive at `path` (replacing it).
void write_zip(const std::string& path, const std::vector<ZipMember>& members);

// An image encoded by OpenCV (".png", ".jpg", ".bmp"); `image` in OpenCV's BGR(A) order.
std::string encoded_image(const cv::Mat& image, const std::string& ext = ".png");

// Test images: a solid colour, or a pattern whose pixel (y, x) depends on both coordinates
// (so flips, crops and channel order are visible).
cv::Mat pattern_image(int rows, int cols, int channels);

}  // namespace gantry::testing
