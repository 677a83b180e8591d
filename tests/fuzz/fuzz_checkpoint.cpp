// libFuzzer target: resuming from a checkpoint (gan/estimator_checkpoint.h) -- picking the newest valid
// file of a model dir (latest, falling back past torn files), reading its config, and
// restoring it into an estimator of the tiny test GAN. The input is the newest checkpoint's
// bytes; the seeds are real checkpoints of that GAN (make_seed_corpora), so the fuzzer reaches
// the restore code and not only the safetensors checks.
#include <sstream>

#include "distribute/strategy.h"
#include "fuzz_support.h"
#include "gan/estimator_checkpoint.h"
#include "support/tiny_gan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_checkpoint");
  static gantry::gan::GanEstimator estimator(gantry::testing::tiny_dcgan(true, 2),
                                             gantry::distribute::make_one_device_strategy(gantry::Device::cpu()),
                                             5);
  const std::filesystem::path model_dir = dir.path() / "model";
  const std::string name = gantry::gan::checkpoint_file_name(20);
  const std::string path = dir.write("model/checkpoints/" + name, data, size);
  const std::string latest = name + "\n";
  dir.write("model/checkpoints/latest", reinterpret_cast<const uint8_t*>(latest.data()), latest.size());

  gantry::fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    std::ostringstream warnings;
    std::optional<std::filesystem::path> found = gantry::gan::latest_checkpoint(model_dir, &warnings);
    if (found && *found != std::filesystem::path(path)) std::abort();  // the only candidate
  });
  gantry::fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    (void)gantry::gan::read_checkpoint_config(path);
  });
  gantry::fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    gantry::gan::LoadCheckpointOptions options;
    options.require_same_seed = false;
    gantry::gan::LoadedCheckpoint loaded = gantry::gan::load_checkpoint(path, estimator, options);
    if (estimator.global_step() != loaded.step) std::abort();
  });
  return 0;
}
