// The "data" section with type "zip" (gan/config/data_config.h): RGBA non-square members become 4-channel
// squares by the channels, square and resize transforms, mirror doubles the epoch, labels and
// the derived keys are written back, and a bad key is an error naming it.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "gan/config/data_config.h"
#include "support/temp_dir.h"
#include "support/zip_fixture.h"

namespace gantry::gan {
namespace {

using testing::TempDir;

std::string make_zip(const TempDir& dir) {
  const std::string path = dir.file("rgba.zip");
  std::vector<testing::ZipMember> members;
  std::string labels = R"({"labels": [)";
  for (int i = 0; i < 4; ++i) {
    const std::string name = "00000/img0000000" + std::to_string(i) + ".png";
    members.push_back({name, testing::encoded_image(testing::pattern_image(6, 10, i % 2 == 0 ? 4 : 1))});
    labels += std::string(i ? "," : "") + "[\"" + name + "\", " + std::to_string(i % 3) + "]";
  }
  members.push_back({"dataset.json", labels + "]}"});
  testing::write_zip(path, members);
  return path;
}

TEST(ZipDataConfig, ChannelsSquareResizeMirrorAndLabels) {
  TempDir dir;
  nlohmann::json section = {{"type", "zip"}, {"path", make_zip(dir)}, {"use_labels", true}, {"mirror", true},
                            {"shuffle_buffer", 0}, {"prefetch", 0},
                            {"transforms", {{"channels", 4}, {"square", "pad"}, {"resize", 8}}}};
  DataConfig data = resolve_data_config(section, "data", 8, 1);
  EXPECT_EQ(data.shape.image_shape, (std::vector<int64_t>{4, 8, 8}));
  EXPECT_EQ(data.shape.num_classes, 3);
  EXPECT_EQ(section["image_shape"], nlohmann::json::array({4, 8, 8}));
  EXPECT_EQ(section["num_classes"], 3);
  std::optional<data::Batch> batch = data.pipeline.make_iterator().next();  // the mirrored epoch
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->images.shape(), (Shape{8, 4, 8, 8}));
  EXPECT_EQ(std::set<int64_t>(batch->indices.begin(), batch->indices.end()).size(), 8u);
  const std::vector<float> labels = batch->labels.to(DType::F32).to_vector();
  EXPECT_EQ(labels, (std::vector<float>{0, 1, 2, 0, 0, 1, 2, 0}));
  // The gray members (1 and 3) got an opaque alpha: their last plane is 255 -> 1 where not padded.
  const std::vector<float> pixels = batch->images.to_vector();
  const size_t centre = 1 * 4 * 64 + 3 * 64 + 4 * 8 + 4;  // image 1, alpha plane, (4, 4)
  EXPECT_FLOAT_EQ(pixels[centre], 1.0f);
}

TEST(ZipDataConfig, BadKeysAreNamed) {
  TempDir dir;
  const std::string zip = make_zip(dir);
  auto error_of = [](nlohmann::json section) {
    try {
      resolve_data_config(section, "data", 2, 1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string msg = error_of({{"type", "zip"}, {"path", zip}, {"transforms", {{"channels", 2}}}});
  EXPECT_NE(msg.find("data.transforms.channels"), std::string::npos) << msg;
  msg = error_of({{"type", "zip"}, {"path", zip}, {"transforms", {{"square", "stretch"}}}});
  EXPECT_NE(msg.find("data.transforms.square"), std::string::npos) << msg;
  msg = error_of({{"type", "zip"}, {"path", zip}, {"use_labels", true}, {"num_classes", 10}});
  EXPECT_NE(msg.find("data.num_classes"), std::string::npos) << msg;  // the data gives 3
}

// data.max_examples keeps a subset of N examples (before mirror; test_data_subset.cpp says which);
// a larger N keeps them all.
TEST(ZipDataConfig, MaxExamplesKeepsASubsetBeforeMirror) {
  TempDir dir;
  const std::string zip = make_zip(dir);
  nlohmann::json section = {{"type", "zip"}, {"path", zip}, {"max_examples", 3}, {"mirror", true},
                            {"shuffle_buffer", 0}, {"prefetch", 0}, {"transforms", {{"channels", 1}, {"square", "pad"}}}};
  DataConfig data = resolve_data_config(section, "data", 6, 1);
  std::optional<data::Batch> batch = data.pipeline.make_iterator().next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->images.size(0), 6);  // 3 examples and their mirror images
  EXPECT_EQ(std::set<int64_t>(batch->indices.begin(), batch->indices.end()), (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
  section = {{"type", "zip"}, {"path", zip}, {"max_examples", 40}, {"shuffle_buffer", 0}, {"prefetch", 0},
             {"transforms", {{"channels", 1}, {"square", "pad"}}}};
  batch = resolve_data_config(section, "data", 4, 1).pipeline.make_iterator().next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(std::set<int64_t>(batch->indices.begin(), batch->indices.end()), (std::set<int64_t>{0, 1, 2, 3}));
  try {
    section["max_examples"] = -1;
    resolve_data_config(section, "data", 2, 1);
    ADD_FAILURE() << "a negative max_examples was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.max_examples"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry::gan
