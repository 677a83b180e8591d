#include "gan/checkpoint/resume_checkpoint.h"

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

// The checkpoint file `find` picks on the chief, read there and sent to every worker with the
// files refused on the way (Note [resume without a shared disk]); `find` runs on the chief only.
ResumePoint chiefs_checkpoint(distribute::Strategy& strategy, const std::function<CheckpointSearch()>& find) {
  ResumePoint out;
  if (strategy.num_replicas_in_sync() == strategy.num_local_replicas()) {  // one process
    CheckpointSearch found = find();
    out.unreadable = std::move(found.unreadable);
    if (found.latest) out.checkpoint = read_checkpoint_file(*found.latest);
    return out;
  }
  // What the chief found ({"path": null} for none, the files refused on the way, or the error it
  // met) travels first, then the file's bytes; global replica 0 (the chief's first) is the root.
  std::vector<std::byte> header, bytes;
  if (strategy.is_chief()) {
    nlohmann::json found = {{"path", nullptr}, {"error", nullptr}, {"unreadable", nlohmann::json::array()}};
    try {
      CheckpointSearch search = find();
      for (const UnreadableCheckpoint& u : search.unreadable)
        found["unreadable"].push_back({{"path", u.path.string()}, {"reason", u.reason}});
      if (search.latest) {
        found["path"] = search.latest->string();
        const std::vector<uint8_t> file = read_file(search.latest->string());
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
  for (const nlohmann::json& u : found["unreadable"])
    out.unreadable.push_back({u["path"].get<std::string>(), u["reason"].get<std::string>()});
  if (found["path"].is_null()) return out;
  const std::string path = found["path"];
  out.checkpoint =
      parse_checkpoint_file(bytes, strategy.is_chief() ? path : path + " (the chief's, sent to this worker)");
  return out;
}

}  // namespace

ResumePoint resume_checkpoint(distribute::Strategy& strategy, const fs::path& model_dir, std::ostream* warn) {
  return chiefs_checkpoint(strategy, [&] { return find_latest_checkpoint(model_dir, warn); });
}

CheckpointFile init_checkpoint(distribute::Strategy& strategy, const fs::path& path, const std::string& what) {
  ResumePoint point = chiefs_checkpoint(strategy, [&] {
    GANTRY_CHECK(fs::is_regular_file(path), what, ": expected a checkpoint file (ckpt-<step>.safetensors, or "
                 "scripts/convert_stylegan2_pkl.py's output), found no file ", path.string());
    return CheckpointSearch{path, {}};
  });
  return std::move(*point.checkpoint);
}

}  // namespace gantry::gan
