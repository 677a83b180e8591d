// State files: safetensors and .npy round trips and validation of corrupt files (written by the
// test), and the module state_dict mismatch report.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/file_io.h"
#include "core/npy.h"
#include "core/ops/ops.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/reshape.h"
#include "nn/safetensors.h"
#include "nn/sequential.h"
#include "nn/state_dict.h"
#include "support/error_text.h"

namespace gantry::nn {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gantry_test_nn_io_" + name)).string();
}

using gantry::testing::error_of;

Tensor f32(std::vector<float> v, Shape s) { return ops::from_vector(v, s); }

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.raw_data());
  return {p, p + t.nbytes()};
}

// A safetensors image from a header string and a data section.
std::vector<uint8_t> image(const std::string& header, size_t data_bytes, uint64_t declared = 0) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = declared ? declared : header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string parse_error(const std::vector<uint8_t>& img) {
  // Through a real file, as a user would hit it.
  std::string path = temp_path("corrupt.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
  }
  std::string msg = error_of([&] { read_safetensors(path); });
  std::filesystem::remove(path);
  if (msg.empty()) return "";
  if (msg.rfind(path + ": ", 0) == 0) return msg.substr(path.size() + 2);  // strip the file name
  return "(file name missing) " + msg;
}

TEST(NnSafetensors, RoundTripEveryDtype) {
  Tensor fl = f32({1.5f, -2.f, 3.25f, 0.f, 1e-20f, 7.f}, {2, 3});
  Tensor f16 = fl.to(DType::F16), bf16 = fl.to(DType::BF16);
  Tensor i64 = ops::from_vector(std::vector<int64_t>{-5, 1LL << 40, 7}, {3});
  Tensor u8 = f32({0.f, 255.f, 17.f, 4.f}, {2, 2}).to(DType::U8);
  Tensor scalar = ops::from_vector(std::vector<int64_t>{42}, Shape{});
  Tensor empty = ops::zeros({0, 4});
  NamedTensors in{{"w.f32", fl}, {"w.f16", f16}, {"bf16", bf16}, {"idx", i64},
                  {"img", u8},    {"n", scalar},  {"empty", empty}};
  std::string path = temp_path("round.safetensors");
  write_safetensors(path, in, {{"format", "pt"}, {"step", "12"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  SafetensorsContents back = read_safetensors(path);
  EXPECT_EQ(back.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"step", "12"}}));
  ASSERT_EQ(back.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, in[i].first);  // data order = given order
    const Tensor& t = back.tensors[i].second;
    EXPECT_EQ(t.dtype(), in[i].second.dtype()) << in[i].first;
    EXPECT_EQ(t.shape(), in[i].second.shape()) << in[i].first;
    EXPECT_EQ(bytes_of(t), bytes_of(in[i].second)) << in[i].first;
  }
  EXPECT_EQ(back.at("idx").data<int64_t>()[1], 1LL << 40);
  // The header is 8-byte aligned and starts with '{', as the reference writer does.
  std::vector<uint8_t> raw = read_file(path);
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(raw[8], '{');
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { back.at("nope"); }).find("no tensor named 'nope'"), std::string::npos);
}

TEST(NnSafetensors, ValidationErrors) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(parse_error(image(ok, 8)), "");  // the valid file the corrupt ones derive from
  EXPECT_EQ(parse_error({1, 2, 3}), "not a safetensors file: expected at least 8 bytes, found 3");
  // Truncated: the data section is shorter than the offsets say.
  EXPECT_EQ(parse_error(image(ok, 4)),
            "tensor 'a': data_offsets [0,8] outside the data section of 4 bytes");
  // Header length beyond the file, and beyond the 100 MB bound.
  EXPECT_EQ(parse_error(image(ok, 8, 1000)),
            "header length 1000 exceeds the file (" + std::to_string(ok.size() + 8) +
                " bytes after the length field)");
  EXPECT_EQ(parse_error(image(ok, 8, 1ULL << 40)),
            "header length 1099511627776 exceeds the limit of 100000000 bytes");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8)).substr(0, 22),
            "malformed JSON header:");
  EXPECT_EQ(parse_error(image(R"([1,2])", 0)),
            "expected the header to be a JSON object starting with '{'");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': byte size 8 (data_offsets [0,8]) does not match dtype F32 x shape (3,) "
            "= 12 bytes");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)),
            "tensor 'b' (bytes 4..12) overlaps tensor 'a' (ending at 8)");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})", 16)),
            "hole in the data section: bytes 8..12 before tensor 'b' belong to no tensor");
  EXPECT_EQ(parse_error(image(ok, 12)),
            "the data section has 4 trailing bytes after the last tensor (12 bytes, tensors "
            "cover 8)");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': unsupported dtype \"F64\" (expected F32, F16, BF16, I64 or U8)");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': shape: expected non-negative integers, found [-1]");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
            "tensor 'a': data_offsets [8,0] outside the data section of 8 bytes");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[2],"offsets":[0,8]}})", 8)),
            "tensor 'a': unexpected key 'offsets' (expected dtype, shape, data_offsets)");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296]},"x":1})", 8)),
            "tensor 'a': missing 'data_offsets'");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': shape [4294967296,4294967296] has too many elements");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"U8","shape":[65536,65536],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': byte size 8 (data_offsets [0,8]) does not match dtype U8 x shape "
            "(65536, 65536) = 4294967296 bytes");
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
            "duplicate header key 'a'");
  EXPECT_EQ(parse_error(image(R"({"__metadata__":{"k":1}})", 0)),
            "__metadata__.k: expected a string, found 1");
  EXPECT_NE(error_of([] { read_safetensors(temp_path("does_not_exist")); }).find("cannot open for reading"),
            std::string::npos);
}

TEST(NnSafetensors, WriterRejectsBadNames) {
  EXPECT_NE(error_of([] { serialize_safetensors({{"a", ops::zeros({1})}, {"a", ops::zeros({1})}}); })
                .find("duplicate tensor name 'a'"),
            std::string::npos);
  EXPECT_NE(error_of([] { serialize_safetensors({{"__metadata__", ops::zeros({1})}}); })
                .find("invalid tensor name '__metadata__'"),
            std::string::npos);
}

TEST(NnNpy, RoundTrip) {
  std::string path = temp_path("a.npy");
  for (const Tensor& t : std::vector<Tensor>{f32({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}), f32({7.f}, {1}),
        ops::from_vector(std::vector<int64_t>{3, -4}, {2}), ops::from_vector(std::vector<int64_t>{9}, Shape{}),
        f32({0.f, 200.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, {2, 2, 2}).to(DType::U8),
        ops::zeros({0, 3})}) {
    write_npy(path, t);
    Tensor back = read_npy(path);
    EXPECT_EQ(back.dtype(), t.dtype()) << t.str();
    EXPECT_EQ(back.shape(), t.shape()) << t.str();
    EXPECT_EQ(bytes_of(back), bytes_of(t)) << t.str();
    std::vector<uint8_t> raw = read_file(path);
    uint16_t len = static_cast<uint16_t>(raw[8] | raw[9] << 8);
    EXPECT_EQ((10 + len) % 64, 0u);  // NumPy's alignment
    EXPECT_EQ(raw[10 + len - 1], '\n');
  }
  std::vector<uint8_t> raw = serialize_npy(ops::zeros({5}));
  std::string header(raw.begin() + 10, raw.begin() + 10 + 50);
  EXPECT_EQ(header.substr(0, 50), "{'descr': '<f4', 'fortran_order': False, 'shape': ");
  std::string rest(raw.begin() + 60, raw.begin() + 67);
  EXPECT_EQ(rest, "(5,), }");
  std::filesystem::remove(path);
  EXPECT_NE(error_of([] { serialize_npy(ops::zeros({2}).to(DType::F16)); })
                .find("npy: expected an f32, u8 or i64 tensor, found f16"),
            std::string::npos);
}

// A .npy image with the given version and header dict.
std::vector<uint8_t> npy_image(const std::string& dict, size_t data, int major = 1) {
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (int b = 0; b < (major == 1 ? 2 : 4); ++b) out.push_back(static_cast<uint8_t>(len >> (8 * b)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.resize(out.size() + data, 0);
  return out;
}

std::string npy_error(const std::vector<uint8_t>& img) {
  return error_of([&] { parse_npy(img.data(), img.size(), "x.npy"); });
}

TEST(NnNpy, VersionTwoAndValidation) {
  std::vector<uint8_t> v2 = npy_image("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1), }\n", 16, 2);
  Tensor t = parse_npy(v2.data(), v2.size(), "v2.npy");
  EXPECT_EQ(t.shape(), Shape({2, 1}));
  EXPECT_EQ(t.dtype(), DType::I64);
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(npy_error(npy_image(good, 12)), "");
  EXPECT_EQ(npy_error(npy_image(good, 8)), "x.npy: expected 12 bytes of data for <f4 x shape (3,), found 8");
  EXPECT_EQ(npy_error(npy_image(good, 16)), "x.npy: expected 12 bytes of data for <f4 x shape (3,), found 16");
  EXPECT_EQ(npy_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}), "x.npy: not a .npy file (expected the magic \\x93NUMPY)");
  EXPECT_EQ(npy_error(npy_image(good, 12, 4)), "x.npy: unsupported .npy version 4.0 (expected 1.0, 2.0 or 3.0)");
  EXPECT_EQ(npy_error(npy_image("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12)),
            "x.npy: unsupported dtype '>f4' (expected '<f4', '|u1' or '<i8')");
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 12)),
            "x.npy: Fortran-order arrays are not supported (save with C order)");
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'shape': (3,), }", 12)),
            "x.npy: .npy header must have 'descr', 'fortran_order' and 'shape'");
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 12)),
            "x.npy: malformed .npy header at character 60: unexpected or repeated key 'x' in "
            "\"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}\"");
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 12)),
            "x.npy: shape (99999999999, 99999999999) needs more data than the file holds (12 bytes)");
  // Seen while fixing fuzz_idx's finding: an empty array's other sizes overflowed Shape::numel.
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }", 0)),
            "x.npy: shape (4294967296, 4294967296, 0) has more elements than any file can hold");
  EXPECT_EQ(npy_error(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (5, 0), }", 0)), "");
  std::vector<uint8_t> truncated = npy_image(good, 12);
  truncated[8] = truncated[9] = 0xff;  // header length far beyond the file
  EXPECT_EQ(npy_error(truncated).substr(0, 36), "x.npy: header length 65535 exceeds t");
}

std::shared_ptr<Sequential> net_for_state() {
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(1, 2, 3, ConvOptions{}, RngKey{1, 0}), std::make_shared<BatchNorm2d>(2),
      std::make_shared<Flatten>(), std::make_shared<Linear>(8, 3, true, RngKey{2, 0})});
}

TEST(NnStateDict, RoundTripKeepsHandles) {
  auto a = net_for_state(), b = net_for_state();
  a->forward(ops::randn({2, 1, 4, 4}, RngKey{3, 0}));  // running stats move
  init::normal_(a->child(3)->get("weight"), 0, 1, RngKey{4, 0});
  std::string path = temp_path("module.safetensors");
  save_state_dict(*a, path, {{"format", "pt"}});
  Tensor handle = b->child(3)->get("weight");
  load_state_dict(*b, path);
  EXPECT_TRUE(handle.same(b->child(3)->get("weight")));  // loaded in place
  auto sa = a->state_dict(), sb = b->state_dict();
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_EQ(bytes_of(sa[i].second), bytes_of(sb[i].second)) << sa[i].first;
  EXPECT_EQ(read_safetensors(path).metadata.at("format"), "pt");
  std::filesystem::remove(path);
}

TEST(NnStateDict, MismatchReportListsEveryProblem) {
  auto net = net_for_state();
  NamedTensors given = net->state_dict();
  given.erase(given.begin());                     // missing 0.weight
  given.erase(given.begin() + 3);                 // missing 1.running_mean
  given.emplace_back("3.weight_orig", ops::zeros({3, 8}));  // unexpected
  given.emplace_back("extra", ops::zeros({1}));             // unexpected
  for (auto& [n, t] : given) {
    if (n == "3.weight") t = ops::zeros({4, 3});            // wrong shape
    if (n == "1.num_batches_tracked") t = ops::zeros(Shape{});  // wrong dtype (f32)
  }
  std::string msg = error_of([&] { load_state_dict(*net, given, "ckpt/G.safetensors"); });
  EXPECT_EQ(msg,
            "ckpt/G.safetensors: state dict does not match Sequential:\n"
            "  missing keys (2): 0.weight, 1.running_mean\n"
            "  unexpected keys (2): 3.weight_orig, extra\n"
            "  '1.num_batches_tracked': expected dtype i64, found f32\n"
            "  '3.weight': expected shape (3, 8), found (4, 3)");
  // f16 values load into f32 parameters.
  NamedTensors half;
  for (auto& [n, t] : net->state_dict()) half.emplace_back(n, t.dtype() == DType::F32 ? t.to(DType::F16) : t);
  auto other = net_for_state();
  load_state_dict(*other, half, "half");
  std::vector<float> w = other->child(3)->get("weight").to_vector(), ref = net->child(3)->get("weight").to_vector();
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref[i], 1e-3);
}

}  // namespace
}  // namespace gantry::nn
