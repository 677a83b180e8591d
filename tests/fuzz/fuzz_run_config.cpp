// libFuzzer target: gan_train's run config, as the app reads it: the file's JSON text
// (apps/app_support.h), then `--set key.path=value` overrides (gan/config/run_config.h), resolved
// without opening the data (the written-back data.image_shape stands in for it, as in
// gan_sample). Input: the JSON text, then optionally a NUL byte and one override per line.
// A config that resolves must resolve to itself again (the resolved config is what
// config.json holds and what a resume reads back).
#include <string_view>

#include "apps/app_support.h"
#include "fuzz_support.h"
#include "gan/config/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_run_config");
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json_text = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string_view::npos) {
    std::string_view rest = input.substr(nul + 1);
    while (!rest.empty()) {
      const size_t eol = rest.find('\n');
      overrides.emplace_back(rest.substr(0, eol));
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    }
  }
  const std::string path =
      dir.write("run.json", reinterpret_cast<const uint8_t*>(json_text.data()), json_text.size());

  gantry::fuzz::expect_clean_rejection("fuzz_run_config", [&] {
    nlohmann::json config = gantry::apps::read_json_file(path);
    for (const std::string& assignment : overrides) gantry::gan::apply_override(config, assignment);
    gantry::gan::ResolveOptions options;
    options.open_data = false;
    gantry::gan::RunSetup run = gantry::gan::resolve_run_config(config, path, options);
    gantry::gan::RunSetup again = gantry::gan::resolve_run_config(run.resolved, "resolved " + path, options);
    if (again.resolved != run.resolved) {
      std::fprintf(stderr, "fuzz_run_config: the resolved config does not resolve to itself:\n%s\n%s\n",
                   run.resolved.dump().c_str(), again.resolved.dump().c_str());
      std::abort();
    }
  });
  return 0;
}
