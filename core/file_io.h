// Whole-file reads and crash-safe writes. Every file Gantry writes for a user (checkpoints,
// state files, arrays, sample grids, configs) goes through write_file_atomic, so a crash never
// leaves a half-written file under the final name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantry {

// Writes to `path.tmp`, fsyncs, renames over `path`, then fsyncs the directory. On failure the
// temporary file is removed and the error names the file and the system's reason.
void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);
void write_file_atomic(const std::string& path, const std::string& text);
// The whole file; errors name it.
std::vector<uint8_t> read_file(const std::string& path);

}  // namespace gantry
