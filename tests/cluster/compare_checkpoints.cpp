// gantry_compare_checkpoints A B: the cluster tests' judge of "bit for bit" (tests/cluster/).
// Reads two checkpoint files (gan/checkpoint/checkpoint_files.h: format, step and seed checked) and
// compares every f32 tensor (weights, buffers, EMA, optimizer state) byte for byte, and the
// step and input position. Exit 0: identical; 1: they differ (each difference named);
// 2: usage, or a file that is not a valid checkpoint.
// gantry_compare_checkpoints --check A: only validates A (exit 0 valid, 2 not), printing its step.
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include "gan/checkpoint/checkpoint_files.h"

namespace {

using gantry::gan::CheckpointFile;

int compare(const CheckpointFile& a, const CheckpointFile& b) {
  int differences = 0;
  auto differ = [&](const std::string& what) {
    std::cout << "differ: " << what << "\n";
    ++differences;
  };
  if (a.step != b.step) differ("step " + std::to_string(a.step) + " vs " + std::to_string(b.step));
  if (a.input_position != b.input_position) differ("input_position");
  std::map<std::string, const gantry::Tensor*> in_b;
  for (const auto& [name, t] : b.contents.tensors) in_b[name] = &t;
  size_t compared = 0;
  for (const auto& [name, t] : a.contents.tensors) {
    auto it = in_b.find(name);
    if (it == in_b.end()) { differ(name + " only in " + a.path); continue; }
    const gantry::Tensor& u = *it->second;
    in_b.erase(it);
    if (t.dtype() != u.dtype() || t.shape() != u.shape()) { differ(name + ": dtype or shape"); continue; }
    if (t.dtype() != gantry::DType::F32) continue;
    const std::vector<float> x = t.to_vector(), y = u.to_vector();
    if (std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0) {
      size_t first = 0;
      while (first < x.size() && std::memcmp(&x[first], &y[first], sizeof(float)) == 0) ++first;
      differ(name + ": element " + std::to_string(first) + " " + std::to_string(x[first]) + " vs " +
             std::to_string(y[first]));
    }
    ++compared;
  }
  for (const auto& [name, t] : in_b) differ(name + " only in " + b.path);
  if (compared < 10) differ("only " + std::to_string(compared) + " f32 tensors (expected a whole GAN)");
  std::cout << (differences ? "DIFFERENT" : "IDENTICAL") << ": " << compared << " f32 tensors of step " << a.step
            << ", " << a.path << " vs " << b.path << "\n";
  return differences ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "--check") {
      const CheckpointFile a = gantry::gan::read_checkpoint_file(argv[2]);
      std::cout << "valid: step " << a.step << ", " << a.contents.tensors.size() << " tensors, " << a.path << "\n";
      return 0;
    }
    if (argc != 3) {
      std::cerr << "usage: gantry_compare_checkpoints A B | --check A (expected 2 arguments, found " << argc - 1
                << ")\n";
      return 2;
    }
    return compare(gantry::gan::read_checkpoint_file(argv[1]), gantry::gan::read_checkpoint_file(argv[2]));
  } catch (const std::exception& e) {
    std::cerr << "gantry_compare_checkpoints: " << e.what() << "\n";
    return 2;
  }
}
