// IDX sources: generated gzip and plain files, every validation error, and the real
// Fashion-MNIST files when the Debian package is installed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/idx.h"
#include "support/temp_dir.h"

namespace gantry::data {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  be32(magic);
  for (uint32_t d : dims) be32(d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_plain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> pixels(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return v;
}

// Runs f and returns the gantry::Error message ("" when nothing was thrown).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DataIdx, ReadsPlainAndGzipImagesAndLabels) {
  TempDir dir;
  const auto px = pixels(3 * 4 * 5);
  const std::vector<uint8_t> labels{7, 0, 9};
  for (bool gz : {false, true}) {
    std::string images_path = dir.file(gz ? "img.gz" : "img"),
                labels_path = dir.file(gz ? "lab.gz" : "lab");
    auto write = gz ? write_gzip : write_plain;
    write(images_path, idx_bytes(kIdxImagesMagic, {3, 4, 5}, px));
    write(labels_path, idx_bytes(kIdxLabelsMagic, {3}, labels));

    Tensor images = read_idx_images(images_path);
    EXPECT_EQ(images.shape(), (Shape{3, 1, 4, 5}));
    EXPECT_EQ(images.dtype(), DType::U8);
    EXPECT_TRUE(std::equal(px.begin(), px.end(), images.data<uint8_t>()));

    auto ds = load_idx_dataset(images_path, labels_path);
    ASSERT_EQ(ds->size(), 3);
    EXPECT_TRUE(ds->has_labels());
    Example ex = ds->get(2);
    EXPECT_EQ(ex.image.shape(), (Shape{1, 4, 5}));
    EXPECT_EQ(ex.image.data<uint8_t>()[0], px[40]);
    EXPECT_EQ(ex.image.data<uint8_t>()[19], px[59]);
    EXPECT_EQ(ex.label, 9);
    EXPECT_EQ(ex.index, 2);
    EXPECT_NE(ds->describe().find(gz ? "img.gz" : "img"), std::string::npos);
  }
}

TEST(DataIdx, UnlabelledDatasetAndIndexCheck) {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes(kIdxImagesMagic, {2, 2, 2}, pixels(8)));
  auto ds = load_idx_dataset(dir.file("img"));
  EXPECT_FALSE(ds->has_labels());
  EXPECT_FALSE(ds->get(1).label.has_value());
  std::string msg = error_of([&] { ds->get(2); });
  EXPECT_NE(msg.find("expected an index in [0, 2), found 2"), std::string::npos) << msg;
}

TEST(DataIdx, TruncatedDataNamesFileExpectedAndFound) {
  TempDir dir;
  auto bytes = idx_bytes(kIdxImagesMagic, {3, 4, 5}, pixels(60));
  bytes.resize(bytes.size() - 7);
  const std::string path = dir.file("truncated-images");
  write_plain(path, bytes);
  std::string msg = error_of([&] { read_idx_images(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 x 4 x 5 = 60 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 53"), std::string::npos) << msg;
}

// Found by fuzz_idx: dims 4294967295 x 4294967295 x 0 and no data passed the size check (their
// product wrapped) and the image shape's element count then overflowed int64 (UBSan).
TEST(DataIdx, DimsWhoseProductOverflowsAreRefused) {
  TempDir dir;
  const std::string path = dir.file("huge-idx3-ubyte");
  write_plain(path, idx_bytes(kIdxImagesMagic, {0xffffffffu, 0xffffffffu, 0}, {}));
  std::string err = error_of([&] { read_idx_images(path); });
  EXPECT_NE(err.find("IDX file " + path + ": the dims in the header (4294967295 x 4294967295 x 0) have "
                     "more elements than any file can hold; found 0 bytes of data"),
            std::string::npos) << err;
  // a legitimately empty file (no images) still reads
  write_plain(path, idx_bytes(kIdxImagesMagic, {0, 28, 28}, {}));
  EXPECT_EQ(read_idx_images(path).shape(), Shape({0, 1, 28, 28}));
}

TEST(DataIdx, TruncatedHeaderAndEmptyFile) {
  TempDir dir;
  auto bytes = idx_bytes(kIdxImagesMagic, {3, 4, 5}, {});
  bytes.resize(10);
  write_plain(dir.file("short"), bytes);
  std::string msg = error_of([&] { read_idx_images(dir.file("short")); });
  EXPECT_NE(msg.find(dir.file("short")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated header: expected 16 bytes for 3 dims, found 10"), std::string::npos)
      << msg;

  write_plain(dir.file("empty"), {});
  msg = error_of([&] { read_idx_labels(dir.file("empty")); });
  EXPECT_NE(msg.find(dir.file("empty")), std::string::npos) << msg;
  EXPECT_NE(msg.find("found a file of 0 bytes"), std::string::npos) << msg;
}

TEST(DataIdx, TruncatedGzipStreamIsAnError) {
  TempDir dir;
  const std::string whole = dir.file("whole.gz"), cut = dir.file("cut.gz");
  write_gzip(whole, idx_bytes(kIdxImagesMagic, {50, 28, 28}, pixels(50 * 28 * 28)));
  std::ifstream in(whole, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100u);
  bytes.resize(bytes.size() / 2);
  std::ofstream(cut, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::string msg = error_of([&] { read_idx_images(cut); });
  EXPECT_NE(msg.find(cut), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(DataIdx, WrongMagicNamesBoth) {
  TempDir dir;
  const std::string path = dir.file("labels-as-images");
  write_plain(path, idx_bytes(kIdxLabelsMagic, {4}, {1, 2, 3, 4}));
  std::string msg = error_of([&] { read_idx_images(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected magic 0x00000803, found 0x00000801"), std::string::npos) << msg;

  write_plain(dir.file("garbage"), {'h', 'e', 'l', 'l', 'o', '!', '!', '!', '!'});
  msg = error_of([&] { read_idx_labels(dir.file("garbage")); });
  EXPECT_NE(msg.find("expected magic 0x00000801, found 0x68656c6c"), std::string::npos) << msg;
}

TEST(DataIdx, DimsThatDoNotMatchTheFileSize) {
  TempDir dir;
  const std::string path = dir.file("extra.gz");
  write_gzip(path, idx_bytes(kIdxImagesMagic, {2, 3, 3}, pixels(25)));  // 18 expected
  std::string msg = error_of([&] { read_idx_images(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2 x 3 x 3 = 18 bytes) do not match the file: found 25"), std::string::npos)
      << msg;
}

TEST(DataIdx, MissingFileIsNamed) {
  std::string msg = error_of([] { read_idx_images("/nonexistent/dir/train-images.gz"); });
  EXPECT_NE(msg.find("/nonexistent/dir/train-images.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an existing file"), std::string::npos) << msg;
}

TEST(DataIdx, LabelCountMismatchNamesBothFiles) {
  TempDir dir;
  write_plain(dir.file("img"), idx_bytes(kIdxImagesMagic, {3, 2, 2}, pixels(12)));
  write_gzip(dir.file("lab.gz"), idx_bytes(kIdxLabelsMagic, {2}, {1, 2}));
  std::string msg = error_of([&] { load_idx_dataset(dir.file("img"), dir.file("lab.gz")); });
  EXPECT_NE(msg.find(dir.file("img")), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("lab.gz")), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3), found 2"), std::string::npos) << msg;
}

// The Debian package dataset-fashion-mnist.
const std::string kFashionDir = "/usr/share/datasets/fashion-mnist/";

TEST(DataIdx, FashionMnistTrain) {
  const std::string images = kFashionDir + "train-images-idx3-ubyte.gz";
  const std::string labels = kFashionDir + "train-labels-idx1-ubyte.gz";
  if (!fs::exists(images) || !fs::exists(labels))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << kFashionDir
                 << " (Debian package dataset-fashion-mnist)";
  auto ds = load_idx_dataset(images, labels);
  ASSERT_EQ(ds->size(), 60000);
  EXPECT_EQ(ds->images().shape(), (Shape{60000, 1, 28, 28}));
  const int64_t* lab = ds->labels().data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(lab, lab + 10),
            (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  std::vector<int64_t> per_class(10, 0);
  for (int64_t i = 0; i < 60000; ++i) per_class.at(static_cast<size_t>(lab[i]))++;
  EXPECT_EQ(per_class, std::vector<int64_t>(10, 6000));
  const uint8_t* px = ds->images().data<uint8_t>();
  EXPECT_EQ(std::accumulate(px, px + 47040000, int64_t{0}), 3431114169LL);
  EXPECT_EQ(crc32(0L, px, 47040000u), 2925911245u);
  // Row 14 of the first image (values from Python's gzip module).
  Example first = ds->get(0);
  const uint8_t* row = first.image.data<uint8_t>() + 14 * 28;
  EXPECT_EQ(std::vector<int>(row + 10, row + 16), (std::vector<int>{0, 0, 237, 226, 217, 223}));
  EXPECT_EQ(first.label, 9);
}

TEST(DataIdx, FashionMnistTest) {
  const std::string images = kFashionDir + "t10k-images-idx3-ubyte.gz";
  const std::string labels = kFashionDir + "t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(images) || !fs::exists(labels))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << kFashionDir
                 << " (Debian package dataset-fashion-mnist)";
  auto ds = load_idx_dataset(images, labels);
  ASSERT_EQ(ds->size(), 10000);
  EXPECT_EQ(ds->images().shape(), (Shape{10000, 1, 28, 28}));
  const int64_t* lab = ds->labels().data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(lab, lab + 10),
            (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  const uint8_t* px = ds->images().data<uint8_t>();
  EXPECT_EQ(std::accumulate(px, px + 7840000, int64_t{0}), 573469082LL);
  EXPECT_EQ(crc32(0L, px, 7840000u), 309494841u);
}

}  // namespace
}  // namespace gantry::data
