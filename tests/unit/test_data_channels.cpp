// Channel conversion between gray, RGB and RGBA (data::convert_channels, as StyleGAN and
// OpenCV), squaring non-square images (data::to_square) and the dataset converter behind
// gan_dataset (data/dataset_conversion.h): read back, labels, errors, nothing left on failure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "core/ops/ops.h"
#include "data/dataset_conversion.h"
#include "data/transforms.h"
#include "data/zip_dataset.h"
#include "support/temp_dir.h"

namespace gantry::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A (C, H, W) u8 image with the given values in CHW order.
Tensor u8(std::vector<float> values, int64_t c, int64_t h, int64_t w) {
  return ops::from_vector(values, Shape{c, h, w}).to(DType::U8);
}
std::vector<float> values(const Tensor& t) { return t.to(DType::F32).to_vector(); }

TEST(ConvertChannels, RgbaToRgbDropsAlpha) {
  Tensor rgba = u8({10, 20, 30, 40, 50, 60, 0, 255}, 4, 1, 2);
  Tensor rgb = convert_channels(rgba, 3);
  EXPECT_EQ(rgb.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values(rgb), (std::vector<float>{10, 20, 30, 40, 50, 60}));
}

TEST(ConvertChannels, GrayToRgbRepeatsAndRgbToGrayIsItuR601Luma) {
  EXPECT_EQ(values(convert_channels(u8({7, 200}, 1, 1, 2), 3)), (std::vector<float>{7, 200, 7, 200, 7, 200}));
  // 0.299 * 255 + 0.587 * 100 + 0.114 * 0 = 134.945 -> 135, as cv::cvtColor(RGB2GRAY).
  EXPECT_EQ(values(convert_channels(u8({255, 100, 0}, 3, 1, 1), 1)), (std::vector<float>{135}));
  // RGBA -> gray ignores alpha.
  EXPECT_EQ(values(convert_channels(u8({255, 100, 0, 3}, 4, 1, 1), 1)), (std::vector<float>{135}));
}

TEST(ConvertChannels, ToRgbaAddsOpaqueAlpha) {
  EXPECT_EQ(values(convert_channels(u8({9}, 1, 1, 1), 4)), (std::vector<float>{9, 9, 9, 255}));
  EXPECT_EQ(values(convert_channels(u8({1, 2, 3}, 3, 1, 1), 4)), (std::vector<float>{1, 2, 3, 255}));
  Tensor f = convert_channels(ops::from_vector(std::vector<float>{0.5f}, Shape{1, 1, 1}), 4);
  EXPECT_EQ(f.to_vector(), (std::vector<float>{0.5f, 0.5f, 0.5f, 255.0f}));
  EXPECT_THROW(convert_channels(u8({1, 2}, 2, 1, 1), 3), Error);
  EXPECT_THROW(convert_channels(u8({1}, 1, 1, 1), 2), Error);
}

TEST(ToSquare, CenterCropsOrPadsAroundTheCentre) {
  // 1 x 2 x 4: rows [0 1 2 3], [4 5 6 7].
  Tensor wide = u8({0, 1, 2, 3, 4, 5, 6, 7}, 1, 2, 4);
  EXPECT_EQ(values(to_square(wide, SquareMode::CenterCrop)), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(values(to_square(wide, SquareMode::Pad)),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0}));
  Tensor tall = u8({1, 2, 3}, 1, 3, 1);  // odd difference: the extra pad at the right
  EXPECT_EQ(values(to_square(tall, SquareMode::Pad)), (std::vector<float>{0, 1, 0, 0, 2, 0, 0, 3, 0}));
  EXPECT_EQ(values(to_square(tall, SquareMode::CenterCrop)), (std::vector<float>{2}));
}

// Images (N, C, H, W) u8 where image i is filled with 10 * i, labels i % 3.
std::shared_ptr<TensorDataset> tensor_dataset(int64_t n, int64_t c, int64_t h, int64_t w, bool labels) {
  std::vector<float> pixels, label_values;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < c * h * w; ++k) pixels.push_back(static_cast<float>(10 * i));
    label_values.push_back(static_cast<float>(i % 3));
  }
  Tensor images = ops::from_vector(pixels, Shape{n, c, h, w}).to(DType::U8);
  Tensor l = labels ? ops::from_vector(label_values, Shape{n}).to(DType::I64) : Tensor();
  return std::make_shared<TensorDataset>(images, l, "test images");
}

TEST(DatasetConversion, WritesAZipThatReadsBackWithLabels) {
  TempDir dir;
  const std::string dest = dir.file("out.zip");
  ConversionOptions o;
  o.resolution = 4;
  o.channels = 3;
  std::vector<int64_t> progress;
  ConversionSummary s = convert_to_zip(*tensor_dataset(5, 1, 8, 8, true), dest, o,
                                       [&](int64_t done, int64_t total) { progress.push_back(done * 100 + total); });
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.channels, 3);
  EXPECT_TRUE(s.labelled);
  EXPECT_EQ(s.class_counts, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(progress, (std::vector<int64_t>{105, 205, 305, 405, 505}));

  ZipDataset zip(dest);
  ASSERT_EQ(zip.size(), 5);
  EXPECT_EQ(zip.members()[4], "00000/img00000004.png");
  EXPECT_EQ(zip.labels(), (std::vector<int64_t>{0, 1, 2, 0, 1}));
  Example ex = zip.get(3);
  EXPECT_EQ(ex.image.shape(), (Shape{3, 4, 4}));
  for (float v : values(ex.image)) EXPECT_EQ(v, 30);
  EXPECT_EQ(zip_member_name(12345), "00012/img00012345.png");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);  // the staged members are gone
}

// A ZIP source (gan_dataset --source in.zip) converts again, e.g. to another resolution, with its
// labels; a separate labels file is refused for it.
TEST(DatasetConversion, AZipSourceConvertsAgainWithItsLabels) {
  TempDir dir;
  const std::string first = dir.file("first.zip"), second = dir.file("second.zip");
  ConversionOptions o;
  o.resolution = 4;
  o.channels = 3;
  convert_to_zip(*tensor_dataset(5, 1, 8, 8, true), first, o, nullptr);
  DatasetPtr source = open_conversion_source(first, "");
  EXPECT_EQ(source->get(0).image.shape(), (Shape{3, 4, 4}));
  o.resolution = 2;
  o.channels = 1;
  ConversionSummary s = convert_to_zip(*source, second, o, nullptr);
  EXPECT_EQ(s.class_counts, (std::vector<int64_t>{2, 2, 1}));
  ZipDataset zip(second);
  EXPECT_EQ(zip.labels(), (std::vector<int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(zip.get(3).image.shape(), (Shape{1, 2, 2}));
  for (float v : values(zip.get(3).image)) EXPECT_EQ(v, 30);
  try {
    open_conversion_source(first, dir.file("labels.npy"));
    ADD_FAILURE() << "a labels file was accepted for a ZIP source";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the labels of a ZIP come from its dataset.json"), std::string::npos)
        << e.what();
  }
}

TEST(DatasetConversion, NonSquareImagesNeedATransform) {
  TempDir dir;
  ConversionOptions o;
  o.resolution = 2;
  o.max_images = 2;
  const std::string dest = dir.file("ns.zip");
  const std::string msg = [&] {
    try {
      convert_to_zip(*tensor_dataset(3, 1, 4, 6, false), dest, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(msg.find("image 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 x 6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("center-crop or pad"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dest));

  o.square = SquareMode::Pad;
  ConversionSummary s = convert_to_zip(*tensor_dataset(3, 1, 4, 6, false), dest, o);
  EXPECT_EQ(s.count, 2);  // max_images
  EXPECT_FALSE(s.labelled);
  ZipDataset zip(dest);
  EXPECT_EQ(zip.size(), 2);
  EXPECT_FALSE(zip.has_labels());
  EXPECT_EQ(zip.get(1).image.shape(), (Shape{1, 2, 2}));
}

// A source whose image `bad` cannot be converted (f32 pixels).
class FailingDataset : public Dataset {
 public:
  explicit FailingDataset(int64_t bad) : good_(tensor_dataset(4, 1, 2, 2, false)), bad_(bad) {}
  int64_t size() const override { return 4; }
  Example get(int64_t i) const override {
    Example ex = good_->get(i);
    if (i == bad_) ex.image = ex.image.to(DType::F32);
    return ex;
  }
  bool has_labels() const override { return false; }
  std::string describe() const override { return "failing"; }

 private:
  DatasetPtr good_;
  int64_t bad_;
};

TEST(DatasetConversion, AnErrorLeavesNothingHalfWritten) {
  TempDir dir;
  const std::string dest = dir.file("keep.zip");
  ConversionOptions o;
  o.resolution = 2;
  convert_to_zip(*tensor_dataset(2, 1, 2, 2, false), dest, o);
  const auto before = fs::file_size(dest);
  EXPECT_THROW(convert_to_zip(FailingDataset(2), dest, o), Error);
  EXPECT_EQ(fs::file_size(dest), before);  // the old archive is untouched
  EXPECT_EQ(ZipDataset(dest).size(), 2);
  EXPECT_THROW(convert_to_zip(FailingDataset(3), dir.file("new.zip"), o), Error);
  EXPECT_FALSE(fs::exists(dir.file("new.zip")));
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);  // no temporaries left next to it
}

}  // namespace
}  // namespace gantry::data
