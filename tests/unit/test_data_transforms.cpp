// Image transforms: exact values for crop, pad, flip, scaling and channel conversion; OpenCV
// resize against hand-computed values; the Philox flip decision.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "base/error.h"
#include "base/philox.h"
#include "data/transforms.h"

namespace gantry::data {
namespace {

Tensor u8_image(int64_t c, int64_t h, int64_t w) {
  Tensor t = Tensor::empty(Shape{c, h, w}, DType::U8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(i);
  return t;
}

std::vector<int> u8_values(const Tensor& t) {
  const uint8_t* p = t.data<uint8_t>();
  return {p, p + t.numel()};
}

TEST(DataTransforms, CenterCrop) {
  Tensor img = u8_image(1, 4, 5);  // value = 5 y + x
  Tensor c = center_crop(img, 2, 3);
  EXPECT_EQ(c.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(u8_values(c), (std::vector<int>{6, 7, 8, 11, 12, 13}));
  EXPECT_THROW(center_crop(img, 5, 5), Error);
}

TEST(DataTransforms, PadU8AndF32) {
  Tensor img = u8_image(2, 1, 2);  // planes {0, 1} and {2, 3}
  Tensor p = pad(img, 1, 0, 2, 1, 9);
  EXPECT_EQ(p.shape(), (Shape{2, 2, 5}));
  EXPECT_EQ(u8_values(p), (std::vector<int>{9, 9, 9, 9, 9, 9, 9, 0, 1, 9,  //
                                            9, 9, 9, 9, 9, 9, 9, 2, 3, 9}));
  Tensor f = pad(img.to(DType::F32), 1, 1, 1, 1, -1.0f);
  EXPECT_EQ(f.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(f.to_vector()[0], -1.0f);
  EXPECT_EQ(f.to_vector()[5], 0.0f);
  EXPECT_EQ(f.to_vector()[12 + 6], 3.0f);
  std::string msg;
  try {
    pad(img, 1, 1, 1, 1, 300);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("[0, 255]"), std::string::npos) << msg;
}

TEST(DataTransforms, FlipHorizontal) {
  Tensor img = u8_image(2, 2, 3);
  EXPECT_EQ(u8_values(flip_horizontal(img)),
            (std::vector<int>{2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9}));
  Tensor f = flip_horizontal(img.to(DType::F32));
  EXPECT_EQ(f.to_vector()[0], 2.0f);
}

TEST(DataTransforms, ScaleToSignedUnit) {
  Tensor img = Tensor::empty(Shape{1, 1, 3}, DType::U8);
  img.data<uint8_t>()[0] = 0;
  img.data<uint8_t>()[1] = 255;
  img.data<uint8_t>()[2] = 51;
  Tensor s = scale_to_signed_unit(img);
  EXPECT_EQ(s.dtype(), DType::F32);
  auto v = s.to_vector();
  EXPECT_FLOAT_EQ(v[0], -1.0f);
  EXPECT_FLOAT_EQ(v[1], 1.0f);
  EXPECT_NEAR(v[2], 51 / 127.5 - 1, 1e-6);
}

TEST(DataTransforms, ConvertChannels) {
  Tensor gray = u8_image(1, 1, 2);
  Tensor rgb = convert_channels(gray, 3);
  EXPECT_EQ(u8_values(rgb), (std::vector<int>{0, 1, 0, 1, 0, 1}));
  Tensor color = Tensor::empty(Shape{3, 1, 1}, DType::U8);
  color.data<uint8_t>()[0] = 200;                                            // R
  color.data<uint8_t>()[1] = 40;                                             // G
  color.data<uint8_t>()[2] = 30;                                             // B
  EXPECT_EQ(u8_values(convert_channels(color, 1)), (std::vector<int>{87}));  // 86.7 rounded
  auto f = convert_channels(color.to(DType::F32), 1).to_vector();
  EXPECT_NEAR(f[0], 86.7f, 1e-3);
  EXPECT_THROW(convert_channels(u8_image(2, 1, 1), 3), Error);
}

TEST(DataTransforms, ResizeValues) {
  // Nearest 2x upscale of a 2 x 2 image repeats each pixel.
  Tensor img = u8_image(1, 2, 2);
  EXPECT_EQ(u8_values(resize(img, 4, 4, Interpolation::Nearest)),
            (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}));
  // Area 2x downscale averages 2 x 2 blocks, per channel.
  Tensor f = Tensor::empty(Shape{2, 2, 4}, DType::F32);
  std::iota(f.data<float>(), f.data<float>() + 16, 0.0f);
  auto r = resize(f, 1, 2, Interpolation::Area).to_vector();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_FLOAT_EQ(r[0], (0 + 1 + 4 + 5) / 4.0f);
  EXPECT_FLOAT_EQ(r[1], (2 + 3 + 6 + 7) / 4.0f);
  EXPECT_FLOAT_EQ(r[2], (8 + 9 + 12 + 13) / 4.0f);
  // Bilinear keeps a constant image constant and gives the requested shape.
  Tensor c = pad(Tensor::empty(Shape{3, 0, 0}, DType::U8), 5, 5, 7, 7, 77);
  Tensor rc = resize(c, 3, 20);
  EXPECT_EQ(rc.shape(), (Shape{3, 3, 20}));
  for (int v : u8_values(rc)) EXPECT_EQ(v, 77);
}

TEST(DataTransforms, RandomFlipDecisionIsPhiloxKeyed) {
  const uint64_t seed = 1234;
  for (int64_t epoch : {0, 3})
    for (int64_t index : {0, 1, 59999}) {
      float u = philox_uniform(RngKey{seed, stream_id(kRandomFlipPurpose, epoch)},
                               static_cast<uint64_t>(index));
      EXPECT_EQ(random_flip_decision(seed, epoch, index), u <= 0.5f);
    }
  int flips = 0, changed = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    bool a = random_flip_decision(seed, 0, i), b = random_flip_decision(seed, 1, i);
    flips += a;
    changed += a != b;
    EXPECT_FALSE(random_flip_decision(seed, 0, i, 0.0f));
    EXPECT_TRUE(random_flip_decision(seed, 0, i, 1.0f));
  }
  EXPECT_NEAR(flips, 5000, 200);    // p = 0.5
  EXPECT_NEAR(changed, 5000, 200);  // epochs decide independently
}

TEST(DataTransforms, TransformFactoriesAndCompose) {
  Example ex;
  ex.image = u8_image(1, 2, 2);
  ex.index = 7;
  ex.epoch = 2;
  const uint64_t seed = 99;
  const bool flips = random_flip_decision(seed, 2, 7);
  Transform t = transforms::compose({transforms::scale_to_signed_unit(),
                                     transforms::random_horizontal_flip(seed),
                                     transforms::pad(1, -1.0f), transforms::convert_channels(3)});
  Example out = t(ex);
  EXPECT_EQ(out.index, 7);
  EXPECT_EQ(out.image.shape(), (Shape{3, 4, 4}));
  auto v = out.image.to_vector();
  EXPECT_FLOAT_EQ(v[0], -1.0f);  // padding
  // Pixel (0, 0) of the original is 0 -> -1; it lands at (1, 1), or (1, 2) when flipped.
  EXPECT_FLOAT_EQ(v[1 * 4 + (flips ? 2 : 1)], -1.0f);
  EXPECT_FLOAT_EQ(v[1 * 4 + (flips ? 1 : 2)], 1 / 127.5f - 1);
  EXPECT_EQ(v[16 + 5], v[5]);  // channels replicated
  EXPECT_EQ(transforms::resize(3, 3)(ex).image.shape(), (Shape{1, 3, 3}));
  EXPECT_EQ(transforms::center_crop(1, 1)(ex).image.shape(), (Shape{1, 1, 1}));
}

}  // namespace
}  // namespace gantry::data
