// Writes the fuzzers' seed corpora (tests/fuzz/corpus/<target>/, committed; a few kB each):
// small valid files of every format, made by Gantry's own writers as the tests make their
// fixtures, plus the repository's configs. Rerun after a format changes:
//   build-fuzz/tests/fuzz/make_seed_corpora tests/fuzz/corpus configs
#include <fstream>
#include <iostream>

#include <opencv2/imgcodecs.hpp>
#include <zlib.h>

#include "apps/app_support.h"
#include "core/npy.h"
#include "core/ops/ops.h"
#include "distribute/strategy.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/config/run_config.h"
#include "gan/objective/lecam_term.h"
#include "nn/safetensors.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"
#include "support/zip_fixture.h"

namespace fs = std::filesystem;
using namespace gantry;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  GANTRY_CHECK(out.good(), path.string(), ": cannot write");
}
std::string as_string(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }
std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string gzip(const std::string& plain) {
  z_stream z{};
  GANTRY_CHECK(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::string out(deflateBound(&z, plain.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  GANTRY_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string idx(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::string out;
  auto be32 = [&out](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
  };
  be32(magic);
  size_t count = 1;
  for (uint32_t d : dims) {
    be32(d);
    count *= d;
  }
  for (size_t i = 0; i < count; ++i) out.push_back(static_cast<char>(i * 37));
  return out;
}

void safetensors_seeds(const fs::path& out) {
  nn::NamedTensors tensors = {
      {"weight", ops::rand({2, 3}, RngKey{1, 1})},
      {"bias", ops::rand({3}, RngKey{1, 2})},
      {"half", ops::rand({2, 2}, RngKey{1, 3}).to(DType::F16)},
      {"brain", ops::rand({4}, RngKey{1, 4}).to(DType::BF16)},
      {"steps", ops::from_vector(std::vector<float>{3, 1, 4}, Shape{3}).to(DType::I64)},
      {"bytes", ops::from_vector(std::vector<float>{0, 255}, Shape{1, 2}).to(DType::U8)},
      {"scalar", ops::from_vector(std::vector<float>{2.5f}, Shape{})}};
  write_bytes(out / "all_dtypes.safetensors", as_string(nn::serialize_safetensors(tensors, {{"format", "pt"}})));
  write_bytes(out / "empty.safetensors", as_string(nn::serialize_safetensors({})));
}

void npy_seeds(const fs::path& out) {
  write_bytes(out / "f32_2x3.npy", as_string(nn::serialize_npy(ops::rand({2, 3}, RngKey{2, 1}))));
  write_bytes(out / "u8_images.npy",
              as_string(nn::serialize_npy(ops::from_vector(std::vector<float>(8, 7), Shape{2, 2, 2}).to(DType::U8))));
  write_bytes(out / "i64_labels.npy",
              as_string(nn::serialize_npy(ops::from_vector(std::vector<float>{1, 0, 9}, Shape{3}).to(DType::I64))));
}

void idx_seeds(const fs::path& out) {
  const std::string images = idx(0x00000803, {2, 3, 3});
  const std::string labels = idx(0x00000801, {4});
  write_bytes(out / "images-idx3-ubyte", images);
  write_bytes(out / "images-idx3-ubyte.gz", gzip(images));
  write_bytes(out / "labels-idx1-ubyte", labels);
  write_bytes(out / "labels-idx1-ubyte.gz", gzip(labels));
}

// The first byte selects extension and colour mode (fuzz_image_decode.cpp).
void image_seeds(const fs::path& out) {
  cv::Mat gray(3, 4, CV_8UC1), color(2, 3, CV_8UC3), rgba(2, 2, CV_8UC4);
  cv::randu(gray, 0, 255);
  cv::randu(color, 0, 255);
  cv::randu(rgba, 0, 255);
  struct Seed { const char* name; const char* ext; char selector; const cv::Mat* image; };
  const Seed seeds[] = {{"gray.png", ".png", 0x00, &gray},  {"color.png", ".png", 0x44, &color},
                        {"rgba.png", ".png", 0x08, &rgba},  {"color.jpg", ".jpg", 0x01, &color},
                        {"gray.bmp", ".bmp", 0x42, &gray}};
  for (const Seed& s : seeds) {
    std::vector<uint8_t> bytes;
    GANTRY_CHECK(cv::imencode(s.ext, *s.image, bytes), "imencode ", s.ext);
    write_bytes(out / s.name, std::string(1, s.selector) + as_string(bytes));
  }
}

// Tiny ZIP datasets (fuzz_zip_dataset.cpp; the first byte selects colour mode and handles): a
// labelled one with a deflated gray PNG and a stored RGBA PNG, and one with class sub-folders.
void zip_seeds(const fs::path& out) {
  const std::string gray = testing::encoded_image(testing::pattern_image(2, 3, 1));
  const std::string rgba = testing::encoded_image(testing::pattern_image(2, 2, 4));
  testing::TempDir dir("gantry_seed_zip");
  testing::write_zip(dir.file("labelled.zip"),
                     {{"00000/", ""},
                      {"00000/img00000000.png", gray},
                      {"00000/img00000001.png", rgba, false},
                      {"dataset.json", R"({"labels": [["00000/img00000000.png", 1], ["00000/img00000001.png", 0]]})"}});
  write_bytes(out / "labelled.zip", std::string(1, '\x03') + read_bytes(dir.file("labelled.zip")));
  testing::write_zip(dir.file("classes.zip"), {{"cats/a.png", gray, false}, {"dogs/b.png", gray, false}});
  write_bytes(out / "classes.zip", std::string(1, '\x04') + read_bytes(dir.file("classes.zip")));
}

// Each config with the data's shape (and class count) written back (resolved without opening the data), both as
// written and fully resolved, and with --set overrides after a NUL (fuzz_run_config.cpp).
void run_config_seeds(const fs::path& out, const fs::path& configs) {
  for (const auto& entry : fs::directory_iterator(configs)) {
    if (entry.path().extension() != ".json") continue;
    nlohmann::json config = apps::read_json_file(entry.path().string());
    const std::string stem = entry.path().stem().string();
    if (!config.is_object() || !config.contains("data") || !config["data"].is_object()) {
      std::cerr << "make_seed_corpora: skipping " << stem << ": not a gan_train config (no data object)\n";
      continue;  // e.g. a sweep's search space
    }
    nlohmann::json& data = config["data"];
    const std::string type = data.value("type", "");
    const bool rgb = type == "image_folder" || type == "zip";  // the shipped examples are RGB
    data["image_shape"] = rgb ? nlohmann::json{3, 32, 32} : nlohmann::json{1, 32, 32};
    if (data.value("use_labels", false) && !data.contains("num_classes")) data["num_classes"] = 10;  // Fashion-MNIST
    gan::ResolveOptions options;
    options.open_data = false;
    try {
      gan::RunSetup run = gan::resolve_run_config(config, stem, options);
      write_bytes(out / (stem + ".resolved.json"), run.resolved.dump(1));
    } catch (const Error& e) {  // e.g. gan_classifier's config: not a gan_train config
      std::cerr << "make_seed_corpora: skipping " << stem << ": " << e.what() << "\n";
      continue;
    }
    write_bytes(out / (stem + ".json"), config.dump(1));
    write_bytes(out / (stem + ".overrides"),
                config.dump() + std::string(1, '\0') +
                    "train.steps=7\nhooks.log_every_steps=3\nstrategy.devices=cpu:0,cpu:1\noptimizers.generator.lr=1e-3");
  }
}

// Checkpoints of the fuzzer's tiny GAN after one step, without and with a LeCam term's state.
void checkpoint_seeds(const fs::path& out) {
  for (const bool lecam : {false, true}) {
    testing::TempDir dir("gantry_seed_checkpoint");
    gan::GanSpec spec = testing::tiny_dcgan(true, 2);
    if (lecam) spec.terms.push_back(gan::make_lecam_term(gan::LeCamSettings{}));
    gan::GanEstimator estimator(spec, distribute::make_one_device_strategy(Device::cpu()), 5);
    estimator.train(testing::blobs(4), 1);
    gan::SaveCheckpointOptions options;
    options.input_position = R"({"epoch": 0, "position": 4})";
    options.config = R"({"train": {"steps": 1}})";
    fs::path path = gan::save_checkpoint(dir.path(), estimator, options);
    write_bytes(out / (lecam ? "tiny_dcgan_lecam_step1.safetensors" : "tiny_dcgan_step1.safetensors"), read_bytes(path));
  }
}

// Image sets as gan_eval reads them: f32 in [-1, 1] and u8 (fuzz_image_set.cpp).
void image_set_seeds(const fs::path& out) {
  write_bytes(out / "f32_images.npy",
              as_string(nn::serialize_npy(ops::tanh(ops::randn(Shape{2, 1, 4, 4}, RngKey{3, 1})))));
  write_bytes(out / "u8_images.npy",
              as_string(nn::serialize_npy(ops::from_vector(std::vector<float>(24, 200), Shape{2, 3, 2, 2}).to(DType::U8))));
}

// A model_dir's files as a run writes them, NUL-separated (fuzz_run_record.cpp): metrics.jsonl,
// metric-fid.jsonl, config.json, checkpoints/latest and a sample grid's name.
void run_record_seeds(const fs::path& out) {
  const std::string metrics =
      R"({"step": 1, "discriminator_loss": 1.2, "generator_loss": 0.7, "discriminator_components": {"adversarial": 1.2}, )"
      R"("images_per_second": 900.5, "time": {"compute": 0.01, "input_wait": 0.001}})" "\n"
      R"({"step": 2, "discriminator_loss": 1.1, "generator_loss": 0.8, "statistics": {"augment/p": 0.1}})" "\n";
  const std::string fid = R"({"step": 2, "metric": "fid", "value": 31.5, "seconds": 2.0})" "\n";
  const std::string config = R"({"model_dir": "runs/x", "train": {"steps": 4}})";
  write_bytes(out / "two_steps",
              metrics + '\0' + fid + '\0' + config + '\0' + "ckpt-2.safetensors\n" + '\0' + "step-2.png");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_seed_corpora OUT_DIR CONFIGS_DIR\n";
    return 2;
  }
  return apps::run_guarded("make_seed_corpora", [&] {
    const fs::path out = argv[1];
    safetensors_seeds(out / "safetensors");
    npy_seeds(out / "npy");
    idx_seeds(out / "idx");
    image_seeds(out / "image_decode");
    zip_seeds(out / "zip_dataset");
    run_config_seeds(out / "run_config", argv[2]);
    checkpoint_seeds(out / "checkpoint");
    image_set_seeds(out / "image_set");
    run_record_seeds(out / "run_record");
    return 0;
  });
}
