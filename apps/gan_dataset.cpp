// gan_dataset --source DIR|in.zip|images.idx[.gz]|images.npy [--labels FILE] --dest out.zip --resolution N
//             [--channels C] [--transform center-crop|pad] [--max-images N]
// Converts an image folder, ZIP, IDX or .npy dataset into a StyleGAN-style ZIP (PNG members in
// %05d/ sub-folders plus dataset.json; data/dataset_conversion.h) that data.type "zip" reads,
// with a progress bar and a summary.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "apps/app_support.h"
#include "data/dataset_conversion.h"
#include "hooks/progress_hook.h"

namespace {

// The same look as the training progress bar (hooks/progress_hook.h): redrawn in place on a
// terminal, a line per 10% otherwise.
class ConversionProgress {
 public:
  explicit ConversionProgress(bool bar) : bar_(bar), start_(Clock::now()) {}
  void operator()(int64_t done, int64_t total) {
    const auto now = Clock::now();
    const bool last = done == total;
    if (bar_) {
      if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
      last_draw_ = now;
      std::cout << "\r\033[K" << render(done, total, now) << (last ? "\n" : "") << std::flush;
    } else if (last || done * 10 / total != (done - 1) * 10 / total) {
      std::cout << render(done, total, now) << std::endl;
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string render(int64_t done, int64_t total, Clock::time_point now) const {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total);
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    const long eta = rate > 0 ? static_cast<long>(static_cast<double>(total - done) / rate + 0.5) : 0;
    char buf[160];
    std::snprintf(buf, sizeof buf, "[%s%s]  %lld/%lld  %.1f%%  %.1f img/s  ETA %ld:%02ld:%02ld",
                  std::string(static_cast<size_t>(filled), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), static_cast<long long>(done),
                  static_cast<long long>(total), 100.0 * static_cast<double>(done) / static_cast<double>(total), rate,
                  eta / 3600, (eta / 60) % 60, eta % 60);
    return buf;
  }
  bool bar_;
  Clock::time_point start_, last_draw_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string source, labels, dest, transform;
  gantry::data::ConversionOptions options;
  CLI::App app{"gan_dataset: convert an image folder, ZIP, IDX or .npy dataset into a ZIP dataset (data.type \"zip\")"};
  app.add_option("--source", source, "image folder, ZIP dataset (.zip), IDX file (.gz or plain) or .npy file")
      ->required();
  app.add_option("--labels", labels, "labels for an IDX or .npy source (IDX or .npy, one per image)");
  app.add_option("--dest", dest, "the ZIP file to write")->required();
  app.add_option("--resolution", options.resolution, "side of the square output images")->required()->check(
      CLI::PositiveNumber);
  app.add_option("--channels", options.channels, "1, 3 or 4 (default: the first image's)")->check(
      CLI::IsMember({1, 3, 4}));
  app.add_option("--transform", transform, "how non-square images become square")->check(
      CLI::IsMember({"center-crop", "pad"}));
  app.add_option("--max-images", options.max_images, "convert only the first N images")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_dataset", [&] {
    if (transform == "center-crop") options.square = gantry::data::SquareMode::CenterCrop;
    if (transform == "pad") options.square = gantry::data::SquareMode::Pad;
    gantry::data::DatasetPtr dataset = gantry::data::open_conversion_source(source, labels);
    std::cout << "converting " << dataset->describe() << " into " << dest << "\n";
    ConversionProgress progress(gantry::hooks::stdout_is_terminal());
    const gantry::data::ConversionSummary s =
        gantry::data::convert_to_zip(*dataset, dest, options, std::ref(progress));
    std::cout << "wrote " << dest << ": " << s.count << " images, " << s.resolution << "x" << s.resolution << ", "
              << s.channels << (s.channels == 1 ? " channel" : " channels") << ", labels: ";
    if (!s.labelled) {
      std::cout << "no\n";
    } else {
      std::cout << "yes, " << s.class_counts.size() << " classes (images per class:";
      for (size_t k = 0; k < s.class_counts.size(); ++k) std::cout << " " << k << ":" << s.class_counts[k];
      std::cout << ")\n";
    }
    return 0;
  });
}
