#include "nn/safetensors.h"

#include "core/file_io.h"


#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

namespace gantry::nn {

static_assert(std::endian::native == std::endian::little,
              "safetensors and .npy I/O assume a little-endian host");

namespace {

bool parse_dtype(const std::string& name, DType& out) {
  static const std::pair<const char*, DType> table[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64}, {"U8", DType::U8}};
  for (const auto& [n, d] : table) {
    if (name == n) {
      out = d;
      return true;
    }
  }
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

// A non-negative integer that fits in 63 bits (JSON numbers may be negative, fractional or huge).
bool as_index(const nlohmann::json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return out <= static_cast<uint64_t>(INT64_MAX);
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

std::string safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
  }
  return "?";
}

const Tensor& SafetensorsContents::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  GANTRY_FAIL(source, ": no tensor named '", name, "'");
}

SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& source) {
  const std::string& src = source;
  GANTRY_CHECK(size >= 8, src, ": not a safetensors file: expected at least 8 bytes, found ", size);
  uint64_t n = 0;
  std::memcpy(&n, data, 8);
  GANTRY_CHECK(n <= kSafetensorsMaxHeaderBytes, src, ": header length ", n,
               " exceeds the limit of ", kSafetensorsMaxHeaderBytes, " bytes");
  GANTRY_CHECK(n <= size - 8, src, ": header length ", n, " exceeds the file (", size - 8,
               " bytes after the length field)");
  GANTRY_CHECK(n >= 2 && data[8] == '{', src, ": expected the header to be a JSON object "
               "starting with '{'");
  const char* text = reinterpret_cast<const char*>(data + 8);

  // Duplicate top-level keys would be silently merged by the JSON library: catch them here.
  std::set<std::string> seen;
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string()) {
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + n, callback);
  } catch (const nlohmann::json::exception& e) {
    GANTRY_FAIL(src, ": malformed JSON header: ", e.what());
  }
  GANTRY_CHECK(header.is_object(), src, ": expected the header to be a JSON object, found ",
               header.type_name());
  GANTRY_CHECK(duplicate.empty(), src, ": duplicate header key '", duplicate, "'");

  SafetensorsContents out;
  out.source = src;
  const uint64_t data_size = size - 8 - n;
  std::vector<Entry> entries;
  for (auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      GANTRY_CHECK(value.is_object(), src, ": __metadata__: expected an object of strings, found ",
                   value.type_name());
      for (auto& [mk, mv] : value.items()) {
        GANTRY_CHECK(mv.is_string(), src, ": __metadata__.", mk, ": expected a string, found ",
                     mv.dump());
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = src + ": tensor '" + key + "'";
    GANTRY_CHECK(value.is_object(), where, ": expected an object, found ", value.type_name());
    for (auto& [field, unused] : value.items())
      GANTRY_CHECK(field == "dtype" || field == "shape" || field == "data_offsets", where,
                   ": unexpected key '", field, "' (expected dtype, shape, data_offsets)");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      GANTRY_CHECK(value.contains(field), where, ": missing '", field, "'");
    Entry e;
    e.name = key;
    const auto& dt = value["dtype"];
    GANTRY_CHECK(dt.is_string(), where, ": dtype: expected a string, found ", dt.dump());
    GANTRY_CHECK(parse_dtype(dt.get<std::string>(), e.dtype), where, ": unsupported dtype ",
                 dt.dump(), " (expected F32, F16, BF16, I64 or U8)");
    const auto& shape = value["shape"];
    GANTRY_CHECK(shape.is_array() && static_cast<int>(shape.size()) <= kMaxRank, where,
                 ": shape: expected a list of at most ", kMaxRank, " sizes, found ", shape.dump());
    // Product of the non-zero sizes, refusing anything that would overflow int64.
    uint64_t numel = 1;
    bool zero = false;
    for (const auto& d : shape) {
      uint64_t v = 0;
      GANTRY_CHECK(as_index(d, v), where, ": shape: expected non-negative integers, found ",
                   shape.dump());
      e.shape.push_back(static_cast<int64_t>(v));
      if (v == 0) {
        zero = true;
        continue;
      }
      GANTRY_CHECK(numel <= static_cast<uint64_t>(INT64_MAX) / v, where, ": shape ", shape.dump(),
                   " has too many elements");
      numel *= v;
    }
    if (zero) numel = 0;
    const auto& off = value["data_offsets"];
    GANTRY_CHECK(off.is_array() && off.size() == 2 && as_index(off[0], e.begin) &&
                     as_index(off[1], e.end),
                 where, ": data_offsets: expected [begin, end] of non-negative integers, found ",
                 off.dump());
    GANTRY_CHECK(e.begin <= e.end && e.end <= data_size, where, ": data_offsets ", off.dump(),
                 " outside the data section of ", data_size, " bytes");
    const uint64_t elem = dtype_size(e.dtype);
    GANTRY_CHECK(numel <= data_size / elem && numel * elem == e.end - e.begin, where,
                 ": byte size ", e.end - e.begin, " (data_offsets ", off.dump(),
                 ") does not match dtype ", dt.get<std::string>(), " x shape ",
                 Shape(e.shape).str(), " = ",
                 numel <= UINT64_MAX / elem ? std::to_string(numel * elem) : "too many", " bytes");
    entries.push_back(std::move(e));
  }

  // The tensors must tile the data section: sorted by offset, each starts where the last ended.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    GANTRY_CHECK(e.begin >= cursor, src, ": tensor '", e.name, "' (bytes ", e.begin, "..", e.end,
                 ") overlaps tensor '", previous ? previous->name : "", "' (ending at ", cursor, ")");
    GANTRY_CHECK(e.begin == cursor, src, ": hole in the data section: bytes ", cursor, "..",
                 e.begin, " before tensor '", e.name, "' belong to no tensor");
    cursor = e.end;
    previous = &e;
  }
  GANTRY_CHECK(cursor == data_size, src, ": the data section has ", data_size - cursor,
               " trailing bytes after the last tensor (", data_size, " bytes, tensors cover ",
               cursor, ")");

  const uint8_t* section = data + 8 + n;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(Shape(e.shape), e.dtype, Device::cpu());
    if (e.end > e.begin) std::memcpy(t.raw_data(), section + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::vector<uint8_t> serialize_safetensors(const NamedTensors& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::set<std::string> names;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    GANTRY_CHECK(!name.empty() && name != "__metadata__", "safetensors: invalid tensor name '",
                 name, "'");
    GANTRY_CHECK(names.insert(name).second, "safetensors: duplicate tensor name '", name, "'");
    GANTRY_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    host.push_back(t.to(Device::cpu()));
    nlohmann::ordered_json entry;
    entry["dtype"] = safetensors_dtype_name(t.dtype());
    entry["shape"] = t.shape().vec();
    entry["data_offsets"] = {offset, offset + t.nbytes()};
    header[name] = entry;
    offset += t.nbytes();
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned (as the reference writer does).
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::vector<uint8_t> out(8 + text.size() + offset);
  uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* cursor = out.data() + 8 + text.size();
  for (const Tensor& t : host) {
    if (t.nbytes()) std::memcpy(cursor, t.raw_data(), t.nbytes());
    cursor += t.nbytes();
  }
  return out;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata));
}

SafetensorsContents read_safetensors(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}


}  // namespace gantry::nn
