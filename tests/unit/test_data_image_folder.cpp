// Image folder source: generated PNG/JPEG/BMP files, class labels, colour modes, errors and the
// skip policy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "base/error.h"
#include "data/image_folder.h"
#include "support/temp_dir.h"

namespace gantry::data {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A 4 x 6 BGR image whose pixel (y, x) is (b, g, r) = (10 * x, 20 * y, 200).
cv::Mat color_image() {
  cv::Mat m(4, 6, CV_8UC3);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * x, 20 * y, 200);
  return m;
}

cv::Mat gray_image(uint8_t base) {
  cv::Mat m(4, 6, CV_8UC1);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) m.at<uint8_t>(y, x) = static_cast<uint8_t>(base + 5 * x + y);
  return m;
}

TEST(DataImageFolder, ClassesInSortedOrderWithLabels) {
  TempDir dir;
  // Created out of order; nested sub-folders inside a class count for it.
  ASSERT_TRUE(cv::imwrite(dir.file("zebra/b.png"), gray_image(1)));
  ASSERT_TRUE(cv::imwrite(dir.file("zebra/deep/a.bmp"), gray_image(2)));
  ASSERT_TRUE(cv::imwrite(dir.file("apple/x.png"), gray_image(3)));
  ASSERT_TRUE(cv::imwrite(dir.file("mango/m.bmp"), gray_image(4)));
  std::ofstream(dir.file("mango/notes.txt")) << "not an image";

  ImageFolderDataset ds(dir.str());
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"apple", "mango", "zebra"}));
  ASSERT_EQ(ds.size(), 4);
  EXPECT_TRUE(ds.has_labels());
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < ds.size(); ++i) labels.push_back(*ds.get(i).label);
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 2}));
  // Files sorted by path within a class: zebra/b.png before zebra/deep/a.bmp.
  EXPECT_EQ(fs::path(ds.files()[2]).filename(), "b.png");
  Example ex = ds.get(3);
  EXPECT_EQ(ex.image.shape(), (Shape{1, 4, 6}));
  EXPECT_EQ(ex.image.data<uint8_t>()[1 * 6 + 2], 2 + 10 + 1);  // lossless BMP: base + 5x + y
  EXPECT_EQ(ex.index, 3);
}

TEST(DataImageFolder, FlatFolderIsUnlabelledAndRecursive) {
  TempDir dir;
  ASSERT_TRUE(cv::imwrite(dir.file("a.png"), gray_image(0)));
  ASSERT_TRUE(cv::imwrite(dir.file("b.PNG"), gray_image(9)));
  ImageFolderDataset ds(dir.str());
  EXPECT_FALSE(ds.has_labels());
  EXPECT_EQ(ds.size(), 2);
  EXPECT_FALSE(ds.get(0).label.has_value());
}

TEST(DataImageFolder, ColourModes) {
  TempDir dir;
  ASSERT_TRUE(cv::imwrite(dir.file("c/color.png"), color_image()));
  ASSERT_TRUE(cv::imwrite(dir.file("c/gray.png"), gray_image(50)));
  ASSERT_TRUE(cv::imwrite(dir.file("c/photo.jpg"), color_image()));

  ImageFolderDataset stored(dir.str());
  Tensor color = stored.get(0).image;  // color.png
  ASSERT_EQ(color.shape(), (Shape{3, 4, 6}));
  const uint8_t* c = color.data<uint8_t>();
  // RGB planes: R = 200, G = 20 y, B = 10 x; check pixel (y=2, x=3).
  EXPECT_EQ(c[0 * 24 + 2 * 6 + 3], 200);
  EXPECT_EQ(c[1 * 24 + 2 * 6 + 3], 40);
  EXPECT_EQ(c[2 * 24 + 2 * 6 + 3], 30);
  EXPECT_EQ(stored.get(1).image.shape(), (Shape{1, 4, 6}));  // gray stays gray

  ImageFolderOptions rgb;
  rgb.color = ColorMode::Rgb;
  ImageFolderDataset as_rgb(dir.str(), rgb);
  Tensor g3 = as_rgb.get(1).image;
  ASSERT_EQ(g3.shape(), (Shape{3, 4, 6}));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(g3.data<uint8_t>()[k * 24 + 7], 50 + 5 + 1);

  ImageFolderOptions gray;
  gray.color = ColorMode::Gray;
  ImageFolderDataset as_gray(dir.str(), gray);
  Tensor c1 = as_gray.get(0).image;
  ASSERT_EQ(c1.shape(), (Shape{1, 4, 6}));
  // OpenCV's luma of (R, G, B) = (200, 40, 30): 0.299*200 + 0.587*40 + 0.114*30 = 86.7
  EXPECT_NEAR(c1.data<uint8_t>()[2 * 6 + 3], 87, 1);

  // JPEG is lossy: close to the source, not equal.
  Tensor jpg = stored.get(2).image;
  ASSERT_EQ(jpg.shape(), (Shape{3, 4, 6}));
  EXPECT_NEAR(jpg.data<uint8_t>()[2 * 6 + 3], 200, 25);
}

TEST(DataImageFolder, MissingAndEmptyFoldersAreNamed) {
  TempDir dir;
  std::string missing = dir.str() + "/nope";
  std::string msg = error_of([&] { ImageFolderDataset ds(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an existing directory"), std::string::npos) << msg;

  msg = error_of([&] { ImageFolderDataset ds(dir.str()); });
  EXPECT_NE(msg.find(dir.str()), std::string::npos) << msg;
  EXPECT_NE(msg.find("found none"), std::string::npos) << msg;

  ASSERT_TRUE(cv::imwrite(dir.file("cats/a.png"), gray_image(0)));
  fs::create_directories(dir.str() + "/dogs");
  std::ofstream(dir.file("dogs/readme.txt")) << "x";
  msg = error_of([&] { ImageFolderDataset ds(dir.str()); });
  EXPECT_NE(msg.find(dir.str() + "/dogs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected images in class folder"), std::string::npos) << msg;
}

TEST(DataImageFolder, UndecodableImageIsAnErrorByDefault) {
  TempDir dir;
  ASSERT_TRUE(cv::imwrite(dir.file("ok.png"), gray_image(0)));
  std::ofstream(dir.file("bad.png")) << "this is not a png";
  std::string msg = error_of([&] { ImageFolderDataset ds(dir.str()); });
  EXPECT_NE(msg.find(dir.file("bad.png")), std::string::npos) << msg;

  // A real PNG signature with the rest cut off passes the cheap check and fails on decoding.
  TempDir dir2;
  ASSERT_TRUE(cv::imwrite(dir2.file("ok.png"), gray_image(0)));
  std::vector<uchar> png;
  ASSERT_TRUE(cv::imencode(".png", color_image(), png));
  png.resize(40);
  std::ofstream(dir2.file("cut.png"), std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), 40);
  ImageFolderDataset lazy(dir2.path());
  ASSERT_EQ(lazy.size(), 2);
  msg = error_of([&] { lazy.get(0); });  // cut.png sorts first
  EXPECT_NE(msg.find(dir2.file("cut.png")), std::string::npos) << msg;
  ImageFolderOptions verify;
  verify.verify = true;
  msg = error_of([&] { ImageFolderDataset ds(dir2.path(), verify); });
  EXPECT_NE(msg.find(dir2.file("cut.png")), std::string::npos) << msg;
}

// Only PNG, JPEG and BMP signatures reach OpenCV: its DICOM reader (GDCM) allocated the 2.97 GB a
// fuzzed header claimed. A DICOM file named .png is refused at open, before any decoder runs.
TEST(DataImageFolder, ContentWithoutAnImageSignatureNeverReachesOpenCv) {
  std::string dicom(128, '\0');
  dicom += "DICM";
  dicom += std::string("\x02\x00\x10\x00\xff\xff\xff\x7f", 8);  // an element claiming 2 GB
  TempDir dir;
  std::ofstream(dir.file("scan.png"), std::ios::binary) << dicom;
  std::string msg = error_of([&] { ImageFolderDataset ds(dir.str()); });
  EXPECT_NE(msg.find(dir.file("scan.png")), std::string::npos) << msg;
  EXPECT_NE(msg.find("found no PNG, JPEG or BMP signature"), std::string::npos) << msg;
  const auto* bytes = reinterpret_cast<const uint8_t*>(dicom.data());
  msg = error_of([&] { decode_image_bytes({bytes, dicom.size()}, "member scan.png", ColorMode::AsStored); });
  EXPECT_NE(msg.find("member scan.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found no PNG, JPEG or BMP signature"), std::string::npos) << msg;

  const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, jpeg[3] = {0xff, 0xd8, 0xff},
                bmp[2] = {'B', 'M'};
  EXPECT_TRUE(has_image_signature(png));
  EXPECT_TRUE(has_image_signature(jpeg));
  EXPECT_TRUE(has_image_signature(bmp));
  EXPECT_FALSE(has_image_signature({png, 7}));
  EXPECT_FALSE(has_image_signature({}));
}

TEST(DataImageFolder, SkipPolicyWarnsAndCounts) {
  TempDir dir;
  ASSERT_TRUE(cv::imwrite(dir.file("a/1.png"), gray_image(0)));
  std::ofstream(dir.file("a/2.png")) << "broken";
  ASSERT_TRUE(cv::imwrite(dir.file("b/1.bmp"), gray_image(7)));
  std::ofstream(dir.file("b/2.jpg")) << "also broken";
  ImageFolderOptions options;
  options.on_error = DecodeErrorPolicy::Skip;
  ::testing::internal::CaptureStderr();
  ImageFolderDataset ds(dir.str(), options);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ds.num_skipped(), 2);
  EXPECT_EQ(ds.skipped(), (std::vector<std::string>{dir.file("a/2.png"), dir.file("b/2.jpg")}));
  EXPECT_NE(err.find("warning"), std::string::npos) << err;
  EXPECT_NE(err.find(dir.file("a/2.png")), std::string::npos) << err;
  ASSERT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.get(0).label, 0);
  EXPECT_EQ(ds.get(1).label, 1);
  EXPECT_EQ(ds.get(1).image.data<uint8_t>()[0], 7);
}

TEST(DataImageFolder, CacheGivesTheSameImages) {
  TempDir dir;
  ASSERT_TRUE(cv::imwrite(dir.file("x/a.png"), color_image()));
  ASSERT_TRUE(cv::imwrite(dir.file("y/b.bmp"), color_image()));
  ImageFolderOptions cached;
  cached.cache = true;
  ImageFolderDataset a(dir.str()), b(dir.str(), cached);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(a.get(i).image.to_vector(), b.get(i).image.to_vector());
}

}  // namespace
}  // namespace gantry::data
