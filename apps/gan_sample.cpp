// gan_sample --model-dir DIR: draws samples from a trained generator (a checkpoint of the run in
// DIR) as a PNG grid and/or a float32 .npy array (N, C, H, W) in [-1, 1]. Noise comes from
// --seed (Philox, so the same seed gives the same samples) or from --noise z.npy.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "apps/app_support.h"
#include "core/autograd/grad_mode.h"
#include "core/npy.h"
#include "data/image_grid.h"
#include "gan/checkpoint_files.h"
#include "gan/plugin_loader.h"
#include "gan/run_config.h"
#include "gan/stylegan2_generator.h"

namespace gantry {
namespace {

struct Args {
  std::string model_dir;
  int64_t step = -1;
  int64_t num = 64;
  uint64_t seed = 0;
  std::string labels;
  bool ema = false;
  std::string out;
  std::string npy;
  std::string noise;
  int64_t batch = 256;
  float truncation_psi = 1.0f;
  int64_t truncation_cutoff = 0;
};

std::vector<int64_t> parse_labels(const std::string& text, int64_t classes) {
  std::vector<int64_t> labels;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    GANTRY_CHECK(end && *end == '\0' && !item.empty() && v >= 0 && v < classes, "--labels: expected class "
                 "indices in [0, ", classes, ") separated by commas, found \"", item, "\"");
    labels.push_back(v);
  }
  return labels;
}

int run(const Args& args) {
  namespace fs = std::filesystem;
  gan::RunSetup setup;
  std::filesystem::path checkpoint;
  try {
    GANTRY_CHECK(args.num > 0, "--num: expected a positive count, found ", args.num);
    GANTRY_CHECK(!args.out.empty() || !args.npy.empty(), "expected --out grid.png and/or --npy samples.npy");
    fs::path dir = args.model_dir;
    nlohmann::json config = apps::read_json_file((dir / "config.json").string());
    gan::load_plugins(config);  // the run's own types
    // Sampling runs on one CPU device, whatever strategy trained the run.
    config["strategy"]["type"] = "one_device";
    config["strategy"]["devices"] = "cpu:0";
    // The run's data is not needed to sample: only its image shape and classes, from the config.
    setup = gan::resolve_run_config(config, (dir / "config.json").string(), {.open_data = false});
    gan::apply_process_settings(setup);  // the run's thread budget
    if (args.step >= 0) {
      checkpoint = gan::checkpoint_dir(dir) / gan::checkpoint_file_name(args.step);
      GANTRY_CHECK(fs::exists(checkpoint), "--step ", args.step, ": no checkpoint ", checkpoint.string());
    } else {
      auto latest = gan::latest_checkpoint(dir, &std::cerr);
      GANTRY_CHECK(latest.has_value(), dir.string(), ": no checkpoint to sample from");
      checkpoint = *latest;
    }
  } catch (const Error& e) {
    std::cerr << "gan_sample: " << e.what() << "\n";
    return 2;
  }

  if (args.ema && !setup.spec.generator_ema.enabled) {
    std::cerr << "gan_sample: --ema: this run has no EMA generator (train.generator_ema.type is \"none\")\n";
    return 2;
  }
  // Only the generator (or its EMA) is built and restored: sampling needs no discriminator,
  // optimizer or estimator. Its initial weights are overwritten by the checkpoint's.
  const gan::CheckpointFile file = gan::read_checkpoint_file(checkpoint);
  nn::ModulePtr generator = setup.spec.generator_fn(Device::cpu(), RngKey{setup.train.seed, stream_id(0x67656eULL, 0)});
  gan::load_checkpoint_network(file, args.ema ? gan::kGeneratorEmaPrefix : gan::kGeneratorPrefix, *generator);
  generator->eval();
  NoGradGuard no_grad;
  gan::TruncationScope truncation(*generator, args.truncation_psi, args.truncation_cutoff, "--truncation-psi");

  const Shape& per_example = setup.spec.noise_shape;
  Tensor noise_file;
  if (!args.noise.empty()) {
    noise_file = nn::read_npy(args.noise);
    GANTRY_CHECK(noise_file.dim() == per_example.rank() + 1 && noise_file.dtype() == DType::F32, args.noise,
                 ": expected f32 noise of shape (N, ", per_example.str(), "...), found ", noise_file.str());
    for (int d = 0; d < per_example.rank(); ++d)
      GANTRY_CHECK(noise_file.size(d + 1) == per_example[d], args.noise, ": expected noise of shape (N, ",
                   per_example.str(), "), found ", noise_file.shape().str());
  }
  const int64_t n = noise_file.defined() ? noise_file.size(0) : args.num;
  std::vector<int64_t> label_list;
  if (setup.num_classes > 0)
    label_list = args.labels.empty() ? std::vector<int64_t>{} : parse_labels(args.labels, setup.num_classes);

  std::vector<Tensor> chunks;
  for (int64_t begin = 0; begin < n; begin += args.batch) {
    const int64_t count = std::min(args.batch, n - begin);
    Shape shape{count};
    for (int64_t d : per_example) shape.push_back(d);
    Tensor z = noise_file.defined() ? ops::slice(noise_file, 0, begin, begin + count)
                                    : ops::randn(shape, RngKey{args.seed, stream_id(0x73616d706c65ULL)},
                                                 static_cast<uint64_t>(begin * per_example.numel()));
    Tensor labels;
    if (setup.num_classes > 0) {
      std::vector<int64_t> l(count);
      for (int64_t i = 0; i < count; ++i)
        l[i] = label_list.empty() ? (begin + i) % setup.num_classes : label_list[(begin + i) % label_list.size()];
      labels = ops::from_vector(l, Shape{count});
    }
    chunks.push_back(setup.num_classes > 0 ? generator->forward(z, labels) : generator->forward(z));
  }
  // Clamped as the metrics see them (metrics/generated_features.cpp): a generator without a
  // final tanh (stylegan2) overshoots [-1, 1], which the .npy promises and gan_eval --fake checks.
  Tensor samples = ops::clamp(chunks.size() == 1 ? chunks[0] : ops::concat(chunks, 0), -1.0f, 1.0f);
  if (!args.npy.empty()) {
    nn::write_npy(args.npy, samples);
    std::cout << "wrote " << args.npy << " " << samples.shape().str() << "\n";
  }
  if (!args.out.empty()) {
    data::write_image_grid(args.out, samples);
    std::cout << "wrote " << args.out << " (" << n << " samples from " << checkpoint.filename().string() << ")\n";
  }
  return 0;
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  gantry::Args args;
  CLI::App app{"gan_sample: draw samples from a trained generator"};
  app.add_option("--model-dir", args.model_dir, "the run's model_dir")->required();
  app.add_option("--step", args.step, "checkpoint step (default: latest)");
  app.add_option("--num", args.num, "number of samples (default 64)");
  app.add_option("--seed", args.seed, "noise seed (default 0)");
  app.add_option("--labels", args.labels, "conditional GANs: class indices, comma-separated, cycled");
  app.add_flag("--ema,!--no-ema", args.ema, "sample the EMA generator (default: no)");
  app.add_option("--out", args.out, "PNG grid to write");
  app.add_option("--npy", args.npy, "float32 .npy (N, C, H, W) in [-1, 1] to write");
  app.add_option("--noise", args.noise, "noise .npy (N, noise...) instead of --seed/--num");
  app.add_option("--batch", args.batch, "samples per generator call (default 256)");
  app.add_option("--truncation-psi", args.truncation_psi,
                 "stylegan2: w = w_avg + psi (w - w_avg) (default 1: no truncation)");
  app.add_option("--truncation-cutoff", args.truncation_cutoff,
                 "stylegan2: truncate only the first N layers' latents (default 0: every layer)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_sample", [&] { return gantry::run(args); });
}
