// ZIP dataset source (data/zip_dataset.h): member order, decoding from memory, labels from
// dataset.json and class sub-folders, errors that name the archive, member and key, and reads
// from several threads; plus StyleGAN's mirror (data/mirrored_dataset.h) and dataset.json in
// image folders.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <thread>
#include <vector>

#include "base/error.h"
#include "data/dataset_json.h"
#include "data/image_folder.h"
#include "data/mirrored_dataset.h"
#include "data/transforms.h"
#include "data/zip_archive.h"
#include "data/zip_dataset.h"
#include "support/temp_dir.h"
#include "support/zip_fixture.h"

namespace gantry::data {
namespace {

using testing::TempDir;
using testing::ZipMember;

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

uint8_t at(const Tensor& t, int64_t c, int64_t y, int64_t x) {
  return t.data<uint8_t>()[(c * t.size(1) + y) * t.size(2) + x];
}

std::string png(int rows, int cols, int channels) {
  return testing::encoded_image(testing::pattern_image(rows, cols, channels));
}

std::string solid_png(uint8_t value) { return testing::encoded_image(cv::Mat(2, 2, CV_8UC1, cv::Scalar(value))); }

TEST(ZipDataset, ReadsImageMembersInNameOrderIgnoringDirectoriesAndOtherFiles) {
  TempDir dir;
  const std::string path = dir.file("d.zip");
  testing::write_zip(path, {{"b.png", solid_png(2)},
                            {"sub/", ""},
                            {"README.txt", "not an image"},
                            {"a.png", solid_png(1), false},
                            {"c.JPG", testing::encoded_image(cv::Mat(2, 2, CV_8UC1, cv::Scalar(3)), ".jpg")}});
  ZipDataset zip(path);
  ASSERT_EQ(zip.size(), 3);
  EXPECT_EQ(zip.members(), (std::vector<std::string>{"a.png", "b.png", "c.JPG"}));
  EXPECT_FALSE(zip.has_labels());  // members at the top level: no class sub-folders
  for (int64_t i = 0; i < 3; ++i) {
    Example ex = zip.get(i);
    EXPECT_EQ(ex.index, i);
    EXPECT_EQ(ex.image.shape(), (Shape{1, 2, 2}));
    EXPECT_NEAR(at(ex.image, 0, 1, 1), i + 1, i == 2 ? 2 : 0);  // JPEG may be off by a little
  }
  EXPECT_NE(zip.describe().find("3 images"), std::string::npos) << zip.describe();
}

TEST(ZipDataset, DecodesColourAsRgbAndKeepsAlphaWhenAsked) {
  TempDir dir;
  const std::string path = dir.file("c.zip");
  testing::write_zip(path, {{"rgb.png", png(3, 5, 3)}, {"rgba.png", png(3, 5, 4)}});
  ZipDataset as_stored(path);
  ASSERT_EQ(as_stored.members(), (std::vector<std::string>{"rgb.png", "rgba.png"}));
  Tensor rgb = as_stored.get(0).image;
  ASSERT_EQ(rgb.shape(), (Shape{3, 3, 5}));
  // OpenCV's channel 2 (R) of pixel (y, x) is 7x + 31y + 120: it must come out as channel 0.
  EXPECT_EQ(at(rgb, 0, 2, 4), static_cast<uint8_t>(7 * 4 + 31 * 2 + 120));
  EXPECT_EQ(at(rgb, 2, 2, 4), static_cast<uint8_t>(7 * 4 + 31 * 2));
  EXPECT_EQ(as_stored.get(1).image.size(0), 3);  // alpha dropped by default

  ZipDatasetOptions keep;
  keep.color = ColorMode::Unchanged;
  Tensor rgba = ZipDataset(path, keep).get(1).image;
  ASSERT_EQ(rgba.shape(), (Shape{4, 3, 5}));
  EXPECT_EQ(at(rgba, 3, 1, 2), static_cast<uint8_t>(7 * 2 + 31 + 180));  // alpha plane kept
  EXPECT_EQ(at(rgba, 0, 1, 2), static_cast<uint8_t>(7 * 2 + 31 + 120));  // BGRA -> RGBA
}

TEST(ZipDataset, LabelsFromDatasetJsonWinOverClassFolders) {
  TempDir dir;
  const std::string path = dir.file("l.zip");
  testing::write_zip(path, {{"00000/img00000001.png", solid_png(1)},
                            {"00000/img00000000.png", solid_png(0)},
                            {"00001/img00001000.png", solid_png(2)},
                            {"dataset.json", R"({"labels": [["00000/img00000000.png", 6],
                                                            ["00000/img00000001.png", 0],
                                                            ["00001/img00001000.png", 9]]})"}});
  ZipDataset zip(path);
  ASSERT_TRUE(zip.has_labels());
  EXPECT_EQ(zip.labels(), (std::vector<int64_t>{6, 0, 9}));
  EXPECT_EQ(zip.num_classes(), 10);
  EXPECT_TRUE(zip.classes().empty());
  EXPECT_EQ(zip.get(2).label, 9);
  EXPECT_EQ(at(zip.get(2).image, 0, 0, 0), 2);
}

TEST(ZipDataset, NullLabelsMeanUnlabelledEvenWithSubFolders) {
  TempDir dir;
  const std::string path = dir.file("n.zip");
  testing::write_zip(path, {{"00000/img00000000.png", solid_png(0)},
                            {"00001/img00001000.png", solid_png(1)},
                            {"dataset.json", R"({"labels": null})"}});
  ZipDataset zip(path);
  EXPECT_FALSE(zip.has_labels());
  EXPECT_EQ(zip.num_classes(), 0);
  EXPECT_FALSE(zip.get(0).label.has_value());
}

TEST(ZipDataset, ClassSubFoldersGiveLabelsInSortedOrder) {
  TempDir dir;
  const std::string path = dir.file("f.zip");
  testing::write_zip(path, {{"dogs/1.png", solid_png(1)}, {"cats/x/2.png", solid_png(2)}, {"cats/3.png", solid_png(3)}});
  ZipDataset zip(path);
  EXPECT_EQ(zip.classes(), (std::vector<std::string>{"cats", "dogs"}));
  EXPECT_EQ(zip.members(), (std::vector<std::string>{"cats/3.png", "cats/x/2.png", "dogs/1.png"}));
  EXPECT_EQ(zip.labels(), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(zip.num_classes(), 2);

  testing::write_zip(path, {{"dogs/1.png", solid_png(1)}, {"top.png", solid_png(2)}});
  const std::string msg = error_of([&] { ZipDataset z(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("top.png"), std::string::npos) << msg;
}

// The error for a dataset.json with `labels` names the archive, the key and the member.
std::string label_error(const std::string& labels_json, const std::string& expect_in_message) {
  TempDir dir;
  const std::string path = dir.file("bad.zip");
  testing::write_zip(path, {{"a.png", solid_png(0)}, {"b.png", solid_png(1)}, {"dataset.json", labels_json}});
  const std::string msg = error_of([&] { ZipDataset z(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(expect_in_message), std::string::npos) << msg;
  return msg;
}

TEST(ZipDataset, LabelErrorsNameArchiveMemberAndKey) {
  std::string msg = label_error(R"({"labels": [["a.png", 1], ["missing.png", 2], ["b.png", 0]]})", "labels[1]");
  EXPECT_NE(msg.find("missing.png"), std::string::npos) << msg;
  msg = label_error(R"({"labels": [["a.png", 1], ["b.png", 2.5]]})", "labels[1]");
  EXPECT_NE(msg.find("b.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2.5"), std::string::npos) << msg;
  label_error(R"({"labels": [["a.png", "cat"], ["b.png", 0]]})", "non-negative integer");
  label_error(R"({"labels": [["a.png", -1], ["b.png", 0]]})", "non-negative integer");
  msg = label_error(R"({"labels": [["a.png", 1]]})", "b.png");
  EXPECT_NE(msg.find("has no label"), std::string::npos) << msg;
  label_error(R"({"labels": [["a.png", 1], ["a.png", 1], ["b.png", 0]]})", "second label");
  label_error(R"({"labels": [["a.png"], ["b.png", 0]]})", "labels[0]");
  label_error(R"({"images": []})", "\"labels\"");
  label_error(R"({"labels": [)", "does not parse");
}

TEST(ZipDataset, ArchiveAndMemberErrorsNameThem) {
  TempDir dir;
  const std::string not_zip = dir.file("not.zip");
  std::ofstream(not_zip) << "this is not a zip archive at all";
  std::string msg = error_of([&] { ZipDataset z(not_zip); });
  EXPECT_NE(msg.find(not_zip), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a readable ZIP file"), std::string::npos) << msg;

  msg = error_of([&] { ZipDataset z(dir.file("absent.zip")); });
  EXPECT_NE(msg.find("absent.zip"), std::string::npos) << msg;

  const std::string nested = dir.file("nested.zip");
  testing::write_zip(nested, {{"data/a.png", solid_png(1)}, {"data/dataset.json", R"({"labels": null})"}});
  msg = error_of([&] { ZipDataset z(nested); });
  EXPECT_NE(msg.find("found it as member data/dataset.json"), std::string::npos) << msg;

  const std::string no_images = dir.file("empty.zip");
  testing::write_zip(no_images, {{"notes.txt", "x"}, {"d/", ""}});
  msg = error_of([&] { ZipDataset z(no_images); });
  EXPECT_NE(msg.find("expected image members"), std::string::npos) << msg;

  const std::string broken = dir.file("broken.zip");
  testing::write_zip(broken, {{"good.png", solid_png(1)}, {"bad.png", "\x89PNG but not really"}});
  ZipDataset zip(broken);  // opening checks names only; decoding happens in get()
  msg = error_of([&] { zip.get(0); });
  EXPECT_NE(msg.find(broken), std::string::npos) << msg;
  EXPECT_NE(msg.find("member bad.png"), std::string::npos) << msg;
  EXPECT_NO_THROW(zip.get(1));
  msg = error_of([&] { zip.get(2); });
  EXPECT_NE(msg.find("expected an index in [0, 2)"), std::string::npos) << msg;
}

TEST(ZipDataset, CorruptMemberDataIsAnErrorNamingTheMember) {
  TempDir dir;
  const std::string path = dir.file("crc.zip");
  const std::string content = png(8, 8, 3);
  testing::write_zip(path, {{"x.png", content, false}});
  // Flip a byte inside the stored member: the CRC no longer matches.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t where = bytes.find(content.substr(0, 16)) + 40;
  f.seekp(static_cast<std::streamoff>(where));
  f.put(static_cast<char>(bytes[where] ^ 0x5a));
  f.close();
  const std::string msg = error_of([&] { ZipDataset(path).get(0); });
  EXPECT_NE(msg.find("member x.png"), std::string::npos) << msg;
}

TEST(ZipDataset, ConcurrentReadsEqualSequentialOnes) {
  TempDir dir;
  const std::string path = dir.file("t.zip");
  std::vector<ZipMember> members;
  for (int i = 0; i < 40; ++i) {
    cv::Mat m = testing::pattern_image(6, 6, 3);
    m.at<cv::Vec3b>(0, 0) = cv::Vec3b(static_cast<uint8_t>(i), 0, 0);
    members.push_back({"img" + std::to_string(100 + i) + ".png", testing::encoded_image(m), i % 2 == 0});
  }
  testing::write_zip(path, members);
  for (int handles : {1, 2}) {
    ZipDatasetOptions o;
    o.max_handles = handles;
    ZipDataset zip(path, o);
    std::vector<Tensor> expected;
    for (int64_t i = 0; i < zip.size(); ++i) expected.push_back(zip.get(i).image);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < 5; ++round)
          for (int64_t k = 0; k < zip.size(); ++k) {
            const int64_t i = (k * 7 + t + round) % zip.size();
            if (zip.get(i).image.to_vector() != expected[static_cast<size_t>(i)].to_vector()) ++mismatches;
          }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0) << handles << " handles";
    EXPECT_EQ(at(expected[3], 2, 0, 0), 3);  // member img103.png: blue of (0, 0) is its number
  }
}

TEST(ZipArchive, ListsFilesAndReadsThemWhole) {
  TempDir dir;
  const std::string path = dir.file("a.zip");
  const std::string big(100000, 'q');
  testing::write_zip(path, {{"dir/", ""}, {"dir/big.bin", big}, {"small", "abc", false}});
  ZipArchive archive(path);
  EXPECT_EQ(archive.names(), (std::vector<std::string>{"dir/big.bin", "small"}));
  const std::vector<uint8_t> got = archive.read(0);
  EXPECT_EQ(std::string(got.begin(), got.end()), big);
  EXPECT_EQ(archive.find("small"), 1);
  EXPECT_EQ(archive.find("dir/"), -1);
}

// A handle opened after the archive was rewritten (as gan_dataset does, by rename) would read the
// new file with the old listing: it is an error naming the archive instead. Two threads reading a
// large member force the second handle open.
TEST(ZipArchive, ArchiveRewrittenWhileReadingIsAnError) {
  TempDir dir;
  const std::string path = dir.file("a.zip");
  testing::write_zip(path, {{"big.bin", std::string(8 << 20, 'a'), false}});
  ZipArchive archive(path, 2);
  EXPECT_EQ(archive.read(0).size(), size_t{8} << 20);  // the first handle, opened before the rewrite
  testing::write_zip(path, {{"big.bin", std::string(4 << 20, 'b'), false}});
  std::atomic<int> errors{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        const std::string msg = error_of([&] {
          if (archive.read(0) != std::vector<uint8_t>(8 << 20, 'a')) ++wrong;
        });
        if (!msg.empty()) {
          EXPECT_NE(msg.find(path), std::string::npos) << msg;
          EXPECT_NE(msg.find("changed on disk"), std::string::npos) << msg;
          ++errors;
          return;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(errors.load(), 1) << "the second handle did not open, or did not see the change";
}

TEST(MirroredDataset, DoublesTheDatasetWithFlippedCopies) {
  TempDir dir;
  const std::string path = dir.file("m.zip");
  testing::write_zip(path, {{"a.png", png(2, 3, 1)}, {"b.png", png(2, 3, 1)},
                            {"dataset.json", R"({"labels": [["a.png", 4], ["b.png", 5]]})"}});
  auto zip = std::make_shared<ZipDataset>(path);
  MirroredDataset mirror(zip);
  ASSERT_EQ(mirror.size(), 4);
  EXPECT_TRUE(mirror.has_labels());
  for (int64_t i = 0; i < 2; ++i) {
    Example plain = mirror.get(i), flipped = mirror.get(i + 2);
    EXPECT_EQ(plain.image.to_vector(), zip->get(i).image.to_vector());
    EXPECT_EQ(flipped.image.to_vector(), flip_horizontal(plain.image).to_vector());
    EXPECT_NE(flipped.image.to_vector(), plain.image.to_vector());
    EXPECT_EQ(flipped.label, plain.label);
    EXPECT_EQ(flipped.index, i + 2);
  }
  EXPECT_THROW(mirror.get(4), Error);
}

TEST(ImageFolderDatasetJson, LabelsFromDatasetJsonWinOverClassFolders) {
  TempDir dir;
  for (const char* f : {"b/1.png", "a/2.png", "a/3.png"})
    cv::imwrite(dir.file(f), cv::Mat(2, 2, CV_8UC1, cv::Scalar(9)));
  std::ofstream(dir.file("dataset.json")) << R"({"labels": [["a/2.png", 3], ["a/3.png", 1], ["b/1.png", 3]]})";
  ImageFolderDataset folder(dir.str());
  EXPECT_TRUE(folder.has_labels());
  EXPECT_EQ(folder.labels(), (std::vector<int64_t>{3, 1, 3}));
  EXPECT_EQ(folder.num_classes(), 4);
  EXPECT_EQ(folder.get(1).label, 1);

  std::ofstream(dir.file("dataset.json")) << R"({"labels": [["a/2.png", 3], ["a/3.png", 1]]})";
  const std::string msg = error_of([&] { ImageFolderDataset f(dir.str()); });
  EXPECT_NE(msg.find("b/1.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("dataset.json")), std::string::npos) << msg;
  EXPECT_NE(msg.find("has no label"), std::string::npos) << msg;

  std::ofstream(dir.file("dataset.json")) << R"({"labels": null})";
  EXPECT_FALSE(ImageFolderDataset(dir.str()).has_labels());  // wins over the class folders a/, b/
}

TEST(DatasetJson, RoundTripsThroughTheWriter) {
  const std::vector<std::string> members = {"00000/img00000000.png", "00000/img00000001.png"};
  const std::vector<int64_t> labels = {7, 2};
  EXPECT_EQ(labels_from_dataset_json(dataset_json_text(members, labels), members, "t"), labels);
  EXPECT_EQ(labels_from_dataset_json(dataset_json_text(members, std::nullopt), members, "t"), std::nullopt);
  EXPECT_EQ(labels_from_dataset_json(R"({"labels": [["00000/img00000000.png", null]]})", members, "t"), std::nullopt);
}

}  // namespace
}  // namespace gantry::data
