#include "gan/resume_checkpoint.h"

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/file_io.h"
#include "distribute/blob_broadcast.h"

namespace gantry::gan {

namespace fs = std::filesystem;

namespace {

std::vector<std::byte> as_bytes(const void* data, size_t size) {
  std::vector<std::byte> out(size);
  if (size) std::memcpy(out.data(), data, size);
  return out;
}

// The checkpoint file `find` names on the chief (nothing: none), read there and sent to every
// worker (Note [resume without a shared disk]); `find` runs on the chief only.
std::optional<CheckpointFile> chiefs_checkpoint(distribute::Strategy& strategy,
                                                const std::function<std::optional<fs::path>()>& find) {
  if (strategy.num_replicas_in_sync() == strategy.num_local_replicas()) {  // one process
    std::optional<fs::path> path = find();
    if (!path) return std::nullopt;
    return read_checkpoint_file(*path);
  }
  // What the chief found ({"path": null} for none, or the error it met) travels first, then the
  // file's bytes; global replica 0 (the chief's first) is the root.
  std::vector<std::byte> header, bytes;
  if (strategy.is_chief()) {
    nlohmann::json found = {{"path", nullptr}, {"error", nullptr}};
    try {
      if (std::optional<fs::path> path = find()) {
        found["path"] = path->string();
        const std::vector<uint8_t> file = read_file(path->string());
        bytes = as_bytes(file.data(), file.size());
      }
    } catch (const Error& e) {
      found["error"] = e.what();
      bytes.clear();
    }
    const std::string text = found.dump();
    header = as_bytes(text.data(), text.size());
  }
  strategy.run([&](const distribute::ReplicaContext& ctx) {
    const bool keep = ctx.local_index == 0;
    std::vector<std::byte> h = distribute::broadcast_blob(*ctx.communicator, keep ? std::move(header) : std::vector<std::byte>{}, 0);
    std::vector<std::byte> b = distribute::broadcast_blob(*ctx.communicator, keep ? std::move(bytes) : std::vector<std::byte>{}, 0);
    if (keep) {
      header = std::move(h);
      bytes = std::move(b);
    }
  });
  const nlohmann::json found =
      nlohmann::json::parse(std::string(reinterpret_cast<const char*>(header.data()), header.size()));
  if (!found["error"].is_null())
    GANTRY_FAIL(found["error"].get<std::string>(), strategy.is_chief() ? "" : " (on the chief)");
  if (found["path"].is_null()) return std::nullopt;
  const std::string path = found["path"];
  return parse_checkpoint_file(bytes, strategy.is_chief() ? path : path + " (the chief's, sent to this worker)");
}

}  // namespace

std::optional<CheckpointFile> resume_checkpoint(distribute::Strategy& strategy, const fs::path& model_dir,
                                                std::ostream* warn) {
  return chiefs_checkpoint(strategy, [&] { return latest_checkpoint(model_dir, warn); });
}

CheckpointFile init_checkpoint(distribute::Strategy& strategy, const fs::path& path, const std::string& what) {
  std::optional<CheckpointFile> file = chiefs_checkpoint(strategy, [&]() -> std::optional<fs::path> {
    GANTRY_CHECK(fs::is_regular_file(path), what, ": expected a checkpoint file (ckpt-<step>.safetensors, or "
                 "scripts/convert_stylegan2_pkl.py's output), found no file ", path.string());
    return path;
  });
  return std::move(*file);
}

}  // namespace gantry::gan
