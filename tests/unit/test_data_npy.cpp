// .npy dataset source: image layouts, dtypes, labels and errors naming the files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/error.h"
#include "core/npy.h"
#include "core/ops/ops.h"
#include "data/npy_dataset.h"
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

Tensor u8_images(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::U8);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 3);
  return t;
}

TEST(DataNpy, GrayU8WithLabels) {
  TempDir dir;
  nn::write_npy(dir.file("x.npy"), u8_images({3, 2, 4}));
  nn::write_npy(dir.file("y.npy"), ops::from_vector(std::vector<int64_t>{4, 5, 6}, {3}));
  auto ds = load_npy_dataset(dir.file("x.npy"), dir.file("y.npy"));
  ASSERT_EQ(ds->size(), 3);
  Example ex = ds->get(1);
  EXPECT_EQ(ex.image.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(ex.image.dtype(), DType::U8);
  EXPECT_EQ(ex.image.data<uint8_t>()[0], 8 * 3);
  EXPECT_EQ(ex.label, 5);
}

TEST(DataNpy, RgbF32WithoutLabels) {
  TempDir dir;
  Tensor x = ops::arange(0, 2 * 3 * 2 * 2).to(DType::F32);
  nn::write_npy(dir.file("x.npy"), ops::reshape(x, {2, 3, 2, 2}));
  auto ds = load_npy_dataset(dir.file("x.npy"));
  EXPECT_FALSE(ds->has_labels());
  Example ex = ds->get(1);
  EXPECT_EQ(ex.image.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(ex.image.to_vector()[5], 17.0f);
}

TEST(DataNpy, ErrorsNameTheFiles) {
  TempDir dir;
  nn::write_npy(dir.file("flat.npy"), u8_images({6}));
  std::string msg = error_of([&] { load_npy_dataset(dir.file("flat.npy")); });
  EXPECT_NE(msg.find(dir.file("flat.npy")), std::string::npos) << msg;
  EXPECT_NE(msg.find("found (6,)"), std::string::npos) << msg;

  nn::write_npy(dir.file("x.npy"), u8_images({3, 2, 2}));
  nn::write_npy(dir.file("y2.npy"), ops::from_vector(std::vector<int64_t>{1, 2}, {2}));
  msg = error_of([&] { load_npy_dataset(dir.file("x.npy"), dir.file("y2.npy")); });
  EXPECT_NE(msg.find(dir.file("x.npy")), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("y2.npy")), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3), found 2"), std::string::npos) << msg;

  nn::write_npy(dir.file("yf.npy"), ops::zeros({3}));
  msg = error_of([&] { load_npy_dataset(dir.file("x.npy"), dir.file("yf.npy")); });
  EXPECT_NE(msg.find(dir.file("yf.npy")), std::string::npos) << msg;
  EXPECT_NE(msg.find("dtype i64"), std::string::npos) << msg;

  msg = error_of([&] { load_npy_dataset(dir.file("missing.npy")); });
  EXPECT_NE(msg.find(dir.file("missing.npy")), std::string::npos) << msg;
}

}  // namespace
}  // namespace gantry::data
