#include "jobs/run_checkpoints.h"

#include <algorithm>

#include "base/error.h"
#include "gan/checkpoint/checkpoint_files.h"

namespace gantry::jobs {

namespace fs = std::filesystem;

std::vector<fs::path> run_checkpoints(const fs::path& model_dir, std::optional<int64_t> step, bool all_steps,
                                      std::ostream* log) {
  if (step) {
    GANTRY_CHECK(*step >= 0, "step: expected a checkpoint's step (>= 0), found ", *step);
    const fs::path p = gan::checkpoint_dir(model_dir) / gan::checkpoint_file_name(*step);
    GANTRY_CHECK(fs::exists(p), "step ", *step, ": no checkpoint ", p.string());
    return {p};
  }
  if (all_steps) {
    std::vector<std::pair<int64_t, fs::path>> found;
    if (fs::exists(gan::checkpoint_dir(model_dir)))
      for (const auto& e : fs::directory_iterator(gan::checkpoint_dir(model_dir)))
        if (auto s = gan::checkpoint_step(e.path().filename().string())) found.emplace_back(*s, e.path());
    std::sort(found.begin(), found.end());
    GANTRY_CHECK(!found.empty(), "all steps: no checkpoint in ", gan::checkpoint_dir(model_dir).string());
    std::vector<fs::path> paths;
    for (auto& f : found) paths.push_back(f.second);
    return paths;
  }
  auto latest = gan::latest_checkpoint(model_dir, log);
  GANTRY_CHECK(latest.has_value(), model_dir.string(), ": no checkpoint");
  return {*latest};
}

}  // namespace gantry::jobs
