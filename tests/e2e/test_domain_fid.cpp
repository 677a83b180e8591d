// Domain FID end to end: gan_classifier trains a small Fashion-MNIST classifier (a few dozen
// steps here), and gan_eval with its features separates real test images from other real test
// images, from uniform noise and from an untrained generator by more than 50x on 500 samples
// (about 1000x on 10k samples with the fully trained classifier, docs/metrics.md).
#include <fstream>

#include "core/npy.h"
#include "core/ops/ops.h"
#include "data/idx.h"
#include "data/transforms.h"
#include "e2e/gan_train_app.h"
#include "support/test_paths.h"

namespace gantry::testing::e2e {
namespace {

inline const char* kLabels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

// Test images [begin, end), padded to 32 x 32 and scaled to [-1, 1], as a .npy file.
void write_real_npy(const fs::path& file, int64_t begin, int64_t end) {
  const Tensor all = data::read_idx_images(kImages);  // (N, 1, 28, 28) u8
  std::vector<Tensor> images;
  for (int64_t i = begin; i < end; ++i) {
    Tensor one = ops::reshape(ops::slice(all, 0, i, i + 1), Shape{1, 28, 28});
    one = data::scale_to_signed_unit(data::pad(one, 2, 2, 2, 2));
    images.push_back(ops::reshape(one, Shape{1, 1, 32, 32}));
  }
  nn::write_npy(file.string(), ops::concat(images, 0));
}

double fid_of(const Result& r) {
  std::istringstream in(r.output);
  nlohmann::json found;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') found = nlohmann::json::parse(line);
  EXPECT_TRUE(found.contains("fid")) << r.output;
  return found.value("fid", -1.0);
}

TEST_F(GanTrainApp, DomainFidSeparatesRealFromNoiseAndUntrainedGenerator) {
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(source_dir() +
                                                           "/configs/fashion_mnist_classifier.json"));
  cfg["out_dir"] = (dir_ / "classifier").string();
  cfg["data"]["train_images"] = kImages;  // the test split for both: this checks the plumbing,
  cfg["data"]["train_labels"] = kLabels;  // not generalisation
  cfg["data"]["test_images"] = kImages;
  cfg["data"]["test_labels"] = kLabels;
  cfg["train"]["max_steps"] = 60;
  cfg["train"]["batch_size"] = 64;
  cfg["train"]["log_every_steps"] = 0;
  std::ofstream(dir_ / "classifier.json") << cfg.dump(1);
  Result c = run_app(gan_classifier_app(), "--config " + (dir_ / "classifier.json").string());
  ASSERT_EQ(c.code, 0) << c.output;
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(dir_ / "classifier" / "report.json"));
  EXPECT_EQ(report["steps"], 60);
  EXPECT_GT(report["test_accuracy"].get<double>(), 0.6);
  const std::string network = (dir_ / "classifier" / "classifier.json").string();

  write_real_npy(dir_ / "real_a.npy", 0, 500);
  write_real_npy(dir_ / "real_b.npy", 500, 1000);
  nn::write_npy((dir_ / "noise.npy").string(), ops::add(ops::mul(ops::rand(Shape{500, 1, 32, 32}, RngKey{4, 4}), 2.0f), -1.0f));
  const std::string eval = " --network " + network + " --jsonl -";
  const double real = fid_of(run_app(gan_eval_app(), "--real " + (dir_ / "real_a.npy").string() + " --fake " +
                                                      (dir_ / "real_b.npy").string() + eval));
  const double noise = fid_of(run_app(gan_eval_app(), "--real " + (dir_ / "real_a.npy").string() + " --fake " +
                                                       (dir_ / "noise.npy").string() + eval));
  Result t = run("--config " + write_config("run.json") + " --steps 1");
  ASSERT_EQ(t.code, 0) << t.output;
  const double untrained = fid_of(run_app(gan_eval_app(), "--model-dir " + (dir_ / "run").string() + " --num 500" + eval));
  std::cout << "domain FID (500 vs 500): real " << real << ", noise " << noise << ", untrained G " << untrained << "\n";
  EXPECT_GT(real, 0.0);
  EXPECT_GT(noise, 50 * real);  // measured ~116x (500 samples, 60-step classifier; 10k samples: ~1100x)
  EXPECT_GT(untrained, 50 * real);  // measured ~185x
}

}  // namespace
}  // namespace gantry::testing::e2e
