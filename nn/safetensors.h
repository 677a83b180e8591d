// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the raw little-endian data section.
// The header maps each tensor name to {"dtype": "F32"|"F16"|"BF16"|"I64"|"U8", "shape": [...],
// "data_offsets": [begin, end]} (offsets relative to the data section) and may hold a
// "__metadata__" map of strings.
//
// Reading validates everything before touching the data, so a bad file gives a gantry::Error
// naming the file (and the tensor) instead of a crash or an out-of-bounds read: N <= 100 MB and
// N <= file size - 8; the header is well-formed JSON, an object, without duplicate keys; every
// entry has exactly those three keys with the right types, a supported dtype and at most
// kMaxRank dimensions; end - begin == dtype size x number of elements; and the tensors, sorted
// by offset, tile the data section exactly (no overlap, no hole, nothing after the last one).
// Writing is atomic: `path.tmp`, fsync, rename.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace gantry::nn {

constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct SafetensorsContents {
  NamedTensors tensors;  // CPU tensors, in data-offset order
  std::map<std::string, std::string> metadata;

  // The tensor named `name`; throws naming `source` when absent.
  const Tensor& at(const std::string& name) const;
  std::string source;
};

// Parses a whole file image; `source` names it in errors.
SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& source);
SafetensorsContents read_safetensors(const std::string& path);

// Serialises tensors (any device; copied to the host) in the given order. Names must be unique,
// non-empty and not "__metadata__".
std::vector<uint8_t> serialize_safetensors(const NamedTensors& tensors,
                                           const std::map<std::string, std::string>& metadata = {});
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// safetensors dtype strings: "F32" <-> DType::F32, ...; parse throws on other names.
std::string safetensors_dtype_name(DType dtype);

}  // namespace gantry::nn
