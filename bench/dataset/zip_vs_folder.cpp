// gantry_dataset_bench: images/s reading a ZIP dataset vs the same PNGs as an image folder,
// decoding included (Dataset::get, as the pipeline's parallel map calls it), on 1 and 2 threads,
// and for the ZIP with a libzip handle per thread (pool of 8) vs one handle behind a mutex.
// Prints wall-clock images/s and process CPU time per image (the machine may be shared).
//   gantry_dataset_bench [--images N] [--resolution R] [--channels C] [--repeats K]
// The images are Fashion-MNIST's test split converted as gan_dataset does (or, without the
// dataset package, a generated pattern), written to a temporary folder and ZIP.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/ops/ops.h"
#include "data/dataset_conversion.h"
#include "data/image_folder.h"
#include "data/zip_archive.h"
#include "data/zip_dataset.h"

namespace fs = std::filesystem;
using namespace gantry;

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Timing {
  double images_per_second = 0;
  double cpu_us_per_image = 0;
};

// Reads every example of `dataset` on `threads` threads (each takes the next index), `repeats`
// times; the best wall time and the CPU time of that pass.
Timing read_all(const data::Dataset& dataset, int threads, int repeats) {
  Timing best;
  const int64_t n = dataset.size();
  for (int r = 0; r < repeats; ++r) {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> checksum{0};
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto work = [&] {
      for (int64_t i; (i = next.fetch_add(1)) < n;) checksum += dataset.get(i).image.data<uint8_t>()[0];
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    if (static_cast<double>(n) / wall > best.images_per_second)
      best = {static_cast<double>(n) / wall, 1e6 * cpu / static_cast<double>(n)};
    if (checksum.load() < 0) std::abort();  // keeps the reads observable
  }
  return best;
}

// Image i: a diagonal pattern shifted by i (used without the Fashion-MNIST package).
std::shared_ptr<data::TensorDataset> generated(int64_t n, int64_t side) {
  std::vector<float> pixels;
  pixels.reserve(static_cast<size_t>(n * side * side));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < side * side; ++p) pixels.push_back(static_cast<float>((p * 7 + i * 13 + (p / side) * 3) % 256));
  return std::make_shared<data::TensorDataset>(ops::from_vector(pixels, Shape{n, 1, side, side}).to(DType::U8), Tensor(),
                                               "generated");
}

}  // namespace

int main(int argc, char** argv) {
  int64_t images = 4000, resolution = 32, channels = 3;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--images")) images = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--resolution")) resolution = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--channels")) channels = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  const fs::path dir = fs::temp_directory_path() / ("gantry_dataset_bench." + std::to_string(::getpid()));
  fs::create_directories(dir / "folder");
  const std::string zip_path = (dir / "images.zip").string();
  const char* fashion = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  data::DatasetPtr source = fs::exists(fashion) ? data::open_conversion_source(fashion, "") : generated(images, 28);
  data::ConversionOptions options;
  options.resolution = resolution;
  options.channels = channels;
  options.max_images = images;
  const data::ConversionSummary summary = data::convert_to_zip(*source, zip_path, options);
  {  // the same PNG bytes as loose files (no dataset.json: unlabelled, as the ZIP read here)
    data::ZipArchive archive(zip_path);
    for (size_t i = 0; i < archive.names().size(); ++i) {
      if (archive.names()[i] == "dataset.json") continue;
      const fs::path file = dir / "folder" / archive.names()[i];
      fs::create_directories(file.parent_path());
      const std::vector<uint8_t> bytes = archive.read(i);
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                  static_cast<std::streamsize>(bytes.size()));
    }
  }
  fs::remove(dir / "folder" / "dataset.json");
  std::printf("%lld PNG images %lldx%lld, %lld channels, from %s; ZIP %.1f MB; best of %d passes\n",
              static_cast<long long>(summary.count), static_cast<long long>(resolution),
              static_cast<long long>(resolution), static_cast<long long>(summary.channels),
              fs::exists(fashion) ? "Fashion-MNIST t10k" : "a generated pattern",
              static_cast<double>(fs::file_size(zip_path)) / 1e6, repeats);
  std::printf("%-28s %8s %12s %16s\n", "source", "threads", "images/s", "CPU us/image");

  data::ImageFolderOptions folder_options;
  folder_options.color = data::ColorMode::Unchanged;
  data::ImageFolderDataset folder((dir / "folder").string(), folder_options);
  data::ZipDatasetOptions pooled, serial;
  pooled.color = serial.color = data::ColorMode::Unchanged;
  serial.max_handles = 1;
  data::ZipDataset zip_pooled(zip_path, pooled), zip_serial(zip_path, serial);
  struct Row { const char* name; const data::Dataset* dataset; };
  const Row rows[] = {{"folder", &folder}, {"zip (handle per thread)", &zip_pooled}, {"zip (one handle, mutex)", &zip_serial}};
  for (const Row& row : rows)
    for (int threads : {1, 2}) {
      const Timing t = read_all(*row.dataset, threads, repeats);
      std::printf("%-28s %8d %12.0f %16.1f\n", row.name, threads, t.images_per_second, t.cpu_us_per_image);
    }
  fs::remove_all(dir);
  return 0;
}
