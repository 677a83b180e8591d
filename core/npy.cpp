#include "core/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/file_io.h"

namespace gantry::nn {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

// A cursor over the Python-literal header dict, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string text, std::string source) : s_(std::move(text)), src_(std::move(source)) {}

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool accept(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    char q = s_[i_++];
    size_t end = s_.find(q, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t integer() {
    skip_ws();
    size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (INT64_MAX - 9) / 10) fail("integer too large");
      v = v * 10 + (s_[i_++] - '0');
    }
    if (i_ == start) fail("expected a non-negative integer");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 longs
    return v;
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> out;
    if (accept(')')) return out;
    while (true) {
      out.push_back(integer());
      if (accept(')')) break;
      expect(',');
      if (accept(')')) break;
    }
    return out;
  }
  bool at_end() {
    skip_ws();
    return i_ == s_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    GANTRY_FAIL(src_, ": malformed .npy header at character ", i_, ": ", what, " in \"", s_, "\"");
  }

 private:
  std::string s_;
  std::string src_;
  size_t i_ = 0;
};

const char* descr_of(DType d) {
  switch (d) {
    case DType::F32: return "<f4";
    case DType::U8: return "|u1";
    case DType::I64: return "<i8";
    default: return nullptr;
  }
}

}  // namespace

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& source) {
  const std::string& src = source;
  GANTRY_CHECK(size >= 10 && std::memcmp(data, kMagic, 6) == 0, src,
               ": not a .npy file (expected the magic \\x93NUMPY)");
  const uint8_t major = data[6], minor = data[7];
  GANTRY_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, src,
               ": unsupported .npy version ", int(major), ".", int(minor),
               " (expected 1.0, 2.0 or 3.0)");
  size_t prefix = major == 1 ? 10 : 12;
  GANTRY_CHECK(size >= prefix, src, ": truncated .npy preamble");
  uint64_t header_len = major == 1 ? uint64_t(data[8]) | uint64_t(data[9]) << 8
                                   : uint64_t(data[8]) | uint64_t(data[9]) << 8 |
                                         uint64_t(data[10]) << 16 | uint64_t(data[11]) << 24;
  GANTRY_CHECK(header_len <= size - prefix, src, ": header length ", header_len,
               " exceeds the file (", size - prefix, " bytes after the preamble)");
  HeaderParser p(std::string(reinterpret_cast<const char*>(data + prefix), header_len), src);

  std::string descr;
  bool fortran = false, have_descr = false, have_fortran = false, have_shape = false;
  std::vector<int64_t> shape;
  p.expect('{');
  while (!p.accept('}')) {
    std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr" && !have_descr) {
      descr = p.string_literal();
      have_descr = true;
    } else if (key == "fortran_order" && !have_fortran) {
      fortran = p.boolean();
      have_fortran = true;
    } else if (key == "shape" && !have_shape) {
      shape = p.tuple();
      have_shape = true;
    } else {
      p.fail("unexpected or repeated key '" + key + "'");
    }
    if (!p.accept(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.fail("trailing characters after the dict");
  GANTRY_CHECK(have_descr && have_fortran && have_shape, src,
               ": .npy header must have 'descr', 'fortran_order' and 'shape'");
  GANTRY_CHECK(!fortran, src, ": Fortran-order arrays are not supported (save with C order)");
  DType dtype;
  if (descr == "<f4") dtype = DType::F32;
  else if (descr == "|u1" || descr == "<u1") dtype = DType::U8;
  else if (descr == "<i8") dtype = DType::I64;
  else GANTRY_FAIL(src, ": unsupported dtype '", descr, "' (expected '<f4', '|u1' or '<i8')");
  GANTRY_CHECK(static_cast<int>(shape.size()) <= kMaxRank, src, ": expected at most ", kMaxRank,
               " dimensions, found ", shape.size());

  const uint64_t available = size - prefix - header_len;
  // The element count, refusing shapes that need more bytes than the file has (which also
  // keeps the product from overflowing).
  const bool zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
  // An empty array's other sizes must still multiply within int64 (a Shape's element count
  // multiplies them in order before reaching the zero).
  uint64_t nonzero = 1;
  for (int64_t d : shape) {
    if (!zero) break;  // the data-size check below bounds a non-empty array
    if (d == 0) continue;
    GANTRY_CHECK(nonzero <= static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(d), src,
                 ": shape ", Shape(shape).str(), " has more elements than any file can hold");
    nonzero *= static_cast<uint64_t>(d);
  }
  uint64_t numel = zero ? 0 : 1;
  for (int64_t d : shape) {
    if (zero) break;
    GANTRY_CHECK(numel <= available / static_cast<uint64_t>(d), src, ": shape ",
                 Shape(shape).str(), " needs more data than the file holds (", available,
                 " bytes)");
    numel *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = numel * dtype_size(dtype);
  GANTRY_CHECK(bytes == available, src, ": expected ", bytes, " bytes of data for ", descr,
               " x shape ", Shape(shape).str(), ", found ", available);
  Tensor t = Tensor::empty(Shape(shape), dtype, Device::cpu());
  if (bytes) std::memcpy(t.raw_data(), data + prefix + header_len, bytes);
  return t;
}

Tensor read_npy(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return parse_npy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> serialize_npy(const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  GANTRY_CHECK(descr != nullptr, "npy: expected an f32, u8 or i64 tensor, found ",
               to_string(t.dtype()));
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.dim(); ++i) dict += (i ? ", " : "") + std::to_string(t.size(i));
  if (t.dim() == 1) dict += ",";  // a Python 1-tuple: (5,)
  dict += "), }";
  // Pad with spaces and a final newline so the data starts 64-byte aligned (NumPy's rule).
  size_t prefix = 10;
  uint8_t major = 1;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 65535) {
    prefix = 12;
    major = 2;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  std::string header = dict + std::string(padded - total, ' ') + "\n";
  Tensor host = t.to(Device::cpu());
  std::vector<uint8_t> out(prefix + header.size() + host.nbytes());
  std::memcpy(out.data(), kMagic, 6);
  out[6] = major;
  out[7] = 0;
  uint64_t len = header.size();
  for (size_t b = 0; b < prefix - 8; ++b) out[8 + b] = static_cast<uint8_t>(len >> (8 * b));
  std::memcpy(out.data() + prefix, header.data(), header.size());
  if (host.nbytes()) std::memcpy(out.data() + prefix + header.size(), host.raw_data(), host.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  write_file_atomic(path, serialize_npy(t));
}

}  // namespace gantry::nn
