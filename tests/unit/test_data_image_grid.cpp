// Sample grids: layout (pixel positions), value mapping, gray and RGB, and the PNG file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "base/error.h"
#include "data/image_grid.h"

namespace gantry::data {
namespace {

namespace fs = std::filesystem;

// Image i is filled with value v(i) = -1 + i * 0.25 (so 0 -> 0 and 8 -> 255 after mapping).
Tensor constant_images(int64_t n, int64_t c, int64_t h, int64_t w) {
  Tensor t = Tensor::empty(Shape{n, c, h, w}, DType::F32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c * h * w; ++k)
      p[i * c * h * w + k] = -1.0f + 0.25f * static_cast<float>(i);
  return t;
}

TEST(DataImageGrid, GrayLayoutAndValues) {
  GridOptions o;
  o.columns = 3;
  o.padding = 1;
  o.pad_value = 7;
  cv::Mat g = make_image_grid(constant_images(5, 1, 2, 4), o);
  // 3 columns x 2 rows of 2 x 4 images with 1 pixel of padding.
  EXPECT_EQ(g.type(), CV_8UC1);
  EXPECT_EQ(g.rows, 2 * (2 + 1) + 1);
  EXPECT_EQ(g.cols, 3 * (4 + 1) + 1);
  EXPECT_EQ(g.at<uint8_t>(0, 0), 7);  // border
  EXPECT_EQ(g.at<uint8_t>(1, 1), 0);  // image 0: -1 -> 0
  // Image 4 (row 1, column 1): top-left at (1 + 1 * 3, 1 + 1 * 5) = (4, 6); value -1 + 1 = 0.
  EXPECT_EQ(g.at<uint8_t>(4, 6), 128);  // 127.5 rounds up
  EXPECT_EQ(g.at<uint8_t>(5, 9), 128);  // its bottom-right pixel
  EXPECT_EQ(g.at<uint8_t>(4, 10), 7);   // padding right of it
  // Image 2 (row 0, column 2) at (1, 11): -0.5 -> 63.75 -> 64.
  EXPECT_EQ(g.at<uint8_t>(1, 11), 64);
  // The empty slot (row 1, column 2) is padding.
  EXPECT_EQ(g.at<uint8_t>(4, 11), 7);
}

TEST(DataImageGrid, ClampsAndDefaultsToSquare) {
  Tensor t = constant_images(9, 1, 1, 1);  // values up to -1 + 2 = 1, index 8
  t.data<float>()[0] = -5.0f;
  t.data<float>()[1] = 5.0f;
  GridOptions o;
  o.padding = 0;
  cv::Mat g = make_image_grid(t, o);
  EXPECT_EQ(g.rows, 3);
  EXPECT_EQ(g.cols, 3);
  EXPECT_EQ(g.at<uint8_t>(0, 0), 0);
  EXPECT_EQ(g.at<uint8_t>(0, 1), 255);
  EXPECT_EQ(g.at<uint8_t>(2, 2), 255);
  o.low = 0.0f;                                           // [0, 1] -> [0, 255]
  EXPECT_EQ(make_image_grid(t, o).at<uint8_t>(1, 1), 0);  // index 4 is 0
}

TEST(DataImageGrid, RgbIsWrittenAsBgrMat) {
  Tensor t = Tensor::empty(Shape{2, 3, 1, 1}, DType::F32);
  float rgb[6] = {1.0f, -1.0f, 0.0f, -1.0f, 1.0f, -1.0f};  // red-ish and green
  std::copy(rgb, rgb + 6, t.data<float>());
  GridOptions o;
  o.padding = 0;
  o.columns = 2;
  cv::Mat g = make_image_grid(t, o);
  ASSERT_EQ(g.type(), CV_8UC3);
  EXPECT_EQ(g.at<cv::Vec3b>(0, 0), cv::Vec3b(128, 0, 255));  // B, G, R
  EXPECT_EQ(g.at<cv::Vec3b>(0, 1), cv::Vec3b(0, 255, 0));
}

TEST(DataImageGrid, WritesPngAtomically) {
  fs::path dir = fs::temp_directory_path() / ("gantry_test_grid_" + std::to_string(::getpid()));
  std::string path = (dir / "samples" / "step_100.png").string();
  GridOptions o;
  o.columns = 2;
  write_image_grid(path, constant_images(4, 3, 5, 6), o);
  cv::Mat back = cv::imread(path, cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(back.empty());
  EXPECT_EQ(back.rows, 2 * 7 + 2);
  EXPECT_EQ(back.cols, 2 * 8 + 2);
  EXPECT_EQ(back.channels(), 3);
  EXPECT_EQ(back.at<cv::Vec3b>(2 + 7, 2 + 8), cv::Vec3b(96, 96, 96));  // image 3: -0.25 -> 95.6
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir / "samples")) {
    ++files;
    EXPECT_EQ(e.path().filename(), "step_100.png");  // no temporary left behind
  }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
  EXPECT_THROW(make_image_grid(Tensor::empty(Shape{2, 2, 3, 3}, DType::F32)), Error);
}

}  // namespace
}  // namespace gantry::data
