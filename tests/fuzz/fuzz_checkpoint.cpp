// libFuzzer target: resuming from a checkpoint (gan/checkpoint/estimator_checkpoint.h) -- picking the newest
// valid file of a model dir (latest, falling back past damaged files, Note [damaged checkpoints]),
// reading its config, and restoring it into an estimator of the tiny test GAN with a LeCam term
// (its state, Note [term state]). The input is the newest checkpoint's bytes; the seeds are real
// checkpoints of that GAN (make_seed_corpora), so the fuzzer reaches the restore code and not only
// the safetensors checks. Each input is tried in two model dirs: alone, where it is chosen or
// refused with an error naming it, and above a valid older checkpoint, which is chosen when the
// input does not read back; the input is then moved aside byte for byte, never deleted.
#include <fstream>
#include <sstream>

#include "distribute/strategy.h"
#include "fuzz_support.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/objective/lecam_term.h"
#include "support/tiny_gan.h"

namespace {

namespace fs = std::filesystem;
using namespace gantry;

gan::GanEstimator& estimator() {
  static gan::GanEstimator* e = [] {
    gan::GanSpec spec = testing::tiny_dcgan(true, 2);
    spec.terms.push_back(gan::make_lecam_term(gan::LeCamSettings{}));
    return new gan::GanEstimator(spec, distribute::make_one_device_strategy(Device::cpu()), 5);
  }();
  return *e;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes the input as `model`'s newest checkpoint (step 20) and points `latest` at it.
fs::path write_newest(const fuzz::ScratchDir& dir, const std::string& model, const uint8_t* data, size_t size) {
  const std::string name = gan::checkpoint_file_name(20);
  const std::string latest = name + "\n";
  dir.write(model + "/checkpoints/latest", reinterpret_cast<const uint8_t*>(latest.data()), latest.size());
  return dir.write(model + "/checkpoints/" + name, data, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir("gantry_fuzz_checkpoint");
  const fs::path alone = dir.path() / "alone", above = dir.path() / "above";
  static const fs::path older = [&] {  // a valid step-10 checkpoint under the input
    gan::GanEstimator& e = estimator();
    e.set_global_step(10);
    return gan::save_checkpoint(above, e);
  }();
  const fs::path path = write_newest(dir, "alone", data, size);

  fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    std::ostringstream warnings;
    std::optional<fs::path> found = gan::latest_checkpoint(alone, &warnings);
    if (!found || *found != path) std::abort();  // the only candidate: chosen, or refused (an Error)
  });
  fuzz::expect_clean_rejection("fuzz_checkpoint", [&] { (void)gan::read_checkpoint_config(path); });
  fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    gan::LoadCheckpointOptions options;
    options.require_same_seed = false;
    gan::LoadedCheckpoint loaded = gan::load_checkpoint(path, estimator(), options);
    if (estimator().global_step() != loaded.step) std::abort();
  });

  // Above a valid older checkpoint: never an error; the input is chosen when it reads back whole.
  const fs::path newest = write_newest(dir, "above", data, size);
  fuzz::expect_clean_rejection("fuzz_checkpoint", [&] {
    std::ostringstream warnings;
    const gan::CheckpointSearch found = gan::find_latest_checkpoint(above, &warnings);
    if (!found.latest || (*found.latest != newest && *found.latest != older)) std::abort();
    if ((*found.latest == older) != (found.unreadable.size() == 1)) std::abort();
    if (found.unreadable.empty()) return;
    // Set aside, never deleted: the bytes are kept whole in a new folder.
    const fs::path folder = gan::set_aside_checkpoints(above, {newest});
    const std::string kept = read_bytes(folder / newest.filename());
    if (kept.size() != size || (size > 0 && kept.compare(0, size, reinterpret_cast<const char*>(data), size) != 0))
      std::abort();
    fs::remove_all(folder);
  });
  return 0;
}
