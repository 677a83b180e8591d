// gan_dataset end to end: converts an IDX subset (labelled, to 3 channels) and a folder of RGB,
// RGBA and gray non-square images into ZIPs, prints the summary, and gan_train trains on them
// (a conditional DCGAN on the labelled ZIP, an RGB DCGAN with mirror on the folder's ZIP).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include <nlohmann/json.hpp>

#include "e2e/gan_train_app.h"
#include "support/test_paths.h"
#include "support/zip_fixture.h"

namespace {

using namespace gantry::testing::e2e;

const char* kLabels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

Result gan_dataset(const std::string& args) { return run_app(gan_dataset_app(), args); }

nlohmann::json zip_data(const fs::path& zip, bool labels, nlohmann::json transforms) {
  return {{"type", "zip"}, {"path", zip.string()}, {"images", nullptr}, {"use_labels", labels},
          {"transforms", std::move(transforms)}};
}

TEST_F(GanTrainApp, GanDatasetConvertsIdxWithLabelsAndAConditionalDcganTrainsOnIt) {
  const fs::path zip = dir_ / "fm.zip";
  Result r = gan_dataset(std::string("--source ") + kImages + " --labels " + kLabels + " --dest " + zip.string() +
                         " --resolution 32 --channels 3 --max-images 200");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("200/200"), std::string::npos) << r.output;  // the progress bar's end
  EXPECT_NE(r.output.find("200 images, 32x32, 3 channels, labels: yes, 10 classes"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(zip));

  const std::string config = write_config(
      "cond.json", {{"data", zip_data(zip, true, {{"pad", nullptr}})},
                    {"generator", {{"conditional", true}}},
                    {"discriminator", {{"conditional", true}}},
                    {"train", {{"steps", 3}}}});
  r = run("--config " + config);
  ASSERT_EQ(r.code, 0) << r.output;
  auto resolved = nlohmann::json::parse(std::ifstream(dir_ / "run" / "config.json"));
  EXPECT_EQ(resolved["data"]["image_shape"], nlohmann::json::array({3, 32, 32}));
  EXPECT_EQ(resolved["data"]["num_classes"], 10);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "checkpoints" / "ckpt-2.safetensors"));
  // The generator's class embedding exists: the labels reached the networks.
  auto ckpt = gantry::nn::read_safetensors((dir_ / "run" / "checkpoints" / "ckpt-2.safetensors").string());
  bool embedding = false;
  for (const auto& [name, t] : ckpt.tensors) embedding = embedding || name.find("embed") != std::string::npos;
  EXPECT_TRUE(embedding);

  // The shipped RGB/ZIP example resolves on this ZIP (docs/data.md builds its full-size one).
  r = run("--config " + source_dir() + "/configs/rgb_zip_dcgan.json --dry-run --set data.path=" +
          zip.string() + " --set model_dir=" + (dir_ / "example").string());
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(GanTrainApp, GanDatasetConvertsAFolderOfMixedImagesAndAnRgbDcganTrainsOnIt) {
  const fs::path folder = dir_ / "images";
  for (int i = 0; i < 24; ++i) {
    const int channels = i % 3 == 0 ? 1 : i % 3 == 1 ? 3 : 4;
    cv::Mat m = gantry::testing::pattern_image(40 + i % 5, 48, channels);
    fs::create_directories(folder / (i < 12 ? "a" : "b"));
    cv::imwrite((folder / (i < 12 ? "a" : "b") / ("img" + std::to_string(i) + ".png")).string(), m);
  }
  const fs::path zip = dir_ / "rgb.zip";
  Result r = gan_dataset("--source " + folder.string() + " --dest " + zip.string() + " --resolution 32");
  EXPECT_EQ(r.code, 1) << r.output;  // non-square without a transform
  EXPECT_NE(r.output.find("expected a square image"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(zip));

  r = gan_dataset("--source " + folder.string() + " --dest " + zip.string() +
                  " --resolution 32 --channels 3 --transform center-crop");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("24 images, 32x32, 3 channels, labels: yes, 2 classes (images per class: 0:12 1:12)"),
            std::string::npos)
      << r.output;

  const std::string config = write_config(
      "rgb.json", {{"data", zip_data(zip, false, {{"pad", nullptr}, {"channels", 3}})},
                   {"train", {{"steps", 3}, {"global_batch_size", 8}}}});
  std::ifstream in(config);
  nlohmann::json cfg = nlohmann::json::parse(in);
  cfg["data"]["mirror"] = true;
  std::ofstream(config) << cfg.dump();
  r = run("--config " + config);
  ASSERT_EQ(r.code, 0) << r.output;
  auto resolved = nlohmann::json::parse(std::ifstream(dir_ / "run" / "config.json"));
  EXPECT_EQ(resolved["data"]["image_shape"], nlohmann::json::array({3, 32, 32}));
  EXPECT_EQ(resolved["data"]["mirror"], true);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "checkpoints" / "ckpt-2.safetensors"));
}

TEST_F(GanTrainApp, ZipDataErrorsNameTheConfigKeyOrArchive) {
  const fs::path zip = dir_ / "bad.zip";
  gantry::testing::write_zip(zip.string(), {{"a.png", gantry::testing::encoded_image(gantry::testing::pattern_image(32, 32, 3))},
                                            {"dataset.json", R"({"labels": [["a.png", 1.5]]})"}});
  const std::string config = write_config("bad.json", {{"data", zip_data(zip, true, {{"pad", nullptr}})}});
  Result r = run("--config " + config);
  EXPECT_EQ(r.code, 2) << r.output;  // gan_train's exit code for a config it cannot use
  EXPECT_NE(r.output.find("bad.zip, member dataset.json: labels[0] (member \"a.png\")"), std::string::npos) << r.output;

  const std::string missing = write_config("missing.json", {{"data", zip_data(dir_ / "nope.zip", false, {{"pad", nullptr}})}});
  r = run("--config " + missing);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("data.path"), std::string::npos) << r.output;
}

}  // namespace
