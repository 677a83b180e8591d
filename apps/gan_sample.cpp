// gan_sample --model-dir DIR: draws samples from a trained generator (a checkpoint of the run in
// DIR) as a PNG grid and/or a float32 .npy array (N, C, H, W) in [-1, 1]. Noise comes from
// --seed (Philox, so the same seed gives the same samples) or from --noise z.npy.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>

#include "apps/app_support.h"
#include "core/npy.h"
#include "data/image_grid.h"
#include "jobs/run_generator.h"

namespace gantry {
namespace {

struct Args {
  std::string model_dir;
  std::optional<int64_t> step;  // none: the latest
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
  std::string noise_mode = "random";
};

int run(const Args& args) {
  std::optional<jobs::RunGenerator> generator;
  try {
    GANTRY_CHECK(args.num > 0, "--num: expected a positive count, found ", args.num);
    GANTRY_CHECK(!args.out.empty() || !args.npy.empty(), "expected --out grid.png and/or --npy samples.npy");
    generator.emplace(args.model_dir, args.step, args.ema, &std::cerr);
  } catch (const Error& e) {
    std::cerr << "gan_sample: " << e.what() << "\n";
    return 2;
  }
  jobs::SampleOptions options;
  options.batch = args.batch;
  options.truncation_psi = args.truncation_psi;
  options.truncation_cutoff = args.truncation_cutoff;
  options.noise_mode = nn::parse_noise_mode(args.noise_mode, "--noise-mode");
  if (generator->num_classes() > 0 && !args.labels.empty())
    options.labels = jobs::parse_labels(args.labels, generator->num_classes(), "--labels");
  const Tensor samples = args.noise.empty() ? generator->sample(args.num, args.seed, options)
                                            : generator->sample_from(nn::read_npy(args.noise), options);
  if (!args.npy.empty()) {
    nn::write_npy(args.npy, samples);
    std::cout << "wrote " << args.npy << " " << samples.shape().str() << "\n";
  }
  if (!args.out.empty()) {
    data::write_image_grid(args.out, samples);
    std::cout << "wrote " << args.out << " (" << samples.size(0) << " samples from "
              << generator->checkpoint().filename().string() << ")\n";
  }
  return 0;
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  gantry::Args args;
  CLI::App app{"gan_sample: draw samples from a trained generator"};
  app.add_option("--model-dir", args.model_dir, "the run's model_dir")->required();
  int64_t step = 0;
  CLI::Option* step_option = app.add_option("--step", step, "checkpoint step (default: latest)");
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
  app.add_option("--noise-mode", args.noise_mode,
                 "stylegan2: random (default), const (the generator's fixed noise maps, as the official "
                 "generate.py's default) or none")
      ->check(CLI::IsMember({"random", "const", "none"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (step_option->count() > 0) args.step = step;  // a negative one is refused, not taken for "latest"
  return gantry::apps::run_guarded("gan_sample", [&] { return gantry::run(args); });
}
