// TensorBoard event files (hooks/): CRC-32C on RFC 3720's vectors and TFRecord's masking, the
// record framing, histograms, PNG headers, the event writer read back by the tests' own reader,
// the hook on a tiny GAN against metrics.jsonl, and the strict "hooks.tensorboard" config.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "core/crc32c.h"
#include "core/file_io.h"
#include "data/png_header.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/event_file_writer.h"
#include "hooks/hook_factory.h"
#include "hooks/metric_file_tail.h"
#include "hooks/metrics_hook.h"
#include "hooks/sample_hook.h"
#include "hooks/tensorboard_config.h"
#include "hooks/tensorboard_hook.h"
#include "hooks/tfrecord_writer.h"
#include "hooks/value_histogram.h"
#include "support/event_file_reader.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"

namespace gantry::hooks {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Value = tensorboard_proto::Summary::Value;

uint32_t crc_of(const std::vector<uint8_t>& bytes) { return crc32c(bytes); }

// Bit-at-a-time CRC-32C: the definition, against which the slicing tables are checked.
uint32_t crc32c_bitwise(const std::vector<uint8_t>& bytes) {
  uint32_t c = 0xffffffffu;
  for (uint8_t b : bytes) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
  }
  return ~c;
}

TEST(Crc32c, Rfc3720Vectors) {
  // RFC 3720, B.4 (iSCSI CRC examples).
  EXPECT_EQ(crc_of(std::vector<uint8_t>(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(crc_of(std::vector<uint8_t>(32, 0xff)), 0x62A8AB43u);
  std::vector<uint8_t> ascending(32), descending(32);
  std::iota(ascending.begin(), ascending.end(), uint8_t{0});
  for (int i = 0; i < 32; ++i) descending[static_cast<size_t>(i)] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc_of(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc_of(descending), 0x113FDB5Cu);
  // The catalogue's check value of "123456789".
  const std::string check = "123456789";
  EXPECT_EQ(crc_of(std::vector<uint8_t>(check.begin(), check.end())), 0xE3069283u);
  EXPECT_EQ(crc_of({}), 0u);
}

TEST(Crc32c, SlicingMatchesBitwiseAtEveryLengthAndOffset) {
  std::mt19937 rng(5);
  std::vector<uint8_t> bytes(80);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t length = 0; offset + length <= bytes.size(); ++length) {
      std::vector<uint8_t> part(bytes.begin() + static_cast<ptrdiff_t>(offset),
                                bytes.begin() + static_cast<ptrdiff_t>(offset + length));
      ASSERT_EQ(crc32c(std::span(bytes.data() + offset, length)), crc32c_bitwise(part)) << offset << "+" << length;
    }
  // Extending continues the CRC of the concatenation.
  const uint32_t head = crc32c(std::span(bytes.data(), 37));
  EXPECT_EQ(crc32c_extend(head, std::span(bytes.data() + 37, bytes.size() - 37)), crc_of(bytes));
}

TEST(Crc32c, MaskRotatesAndOffsets) {
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8, written out for one value.
  EXPECT_EQ(mask_crc32c(0u), 0xa282ead8u);
  EXPECT_EQ(mask_crc32c(0x8A9136AAu), ((0x8A9136AAu >> 15) | (0x8A9136AAu << 17)) + 0xa282ead8u);
  EXPECT_EQ(mask_crc32c(0x00008000u), 0x00000001u + 0xa282ead8u);  // bit 15 rotates to bit 0
  for (uint32_t crc : {0u, 1u, 0x8A9136AAu, 0xffffffffu, 0x12345678u}) {
    EXPECT_NE(mask_crc32c(crc), crc);
    EXPECT_EQ(unmask_crc32c(mask_crc32c(crc)), crc);
  }
}

TEST(TfRecord, FrameLayout) {
  const std::string framed = tfrecord_frame("abc");
  ASSERT_EQ(framed.size(), 8u + 4u + 3u + 4u);
  const std::vector<uint8_t> b(framed.begin(), framed.end());
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 8), (std::vector<uint8_t>{3, 0, 0, 0, 0, 0, 0, 0}));
  auto u32_at = [&](size_t at) {
    return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24;
  };
  EXPECT_EQ(u32_at(8), mask_crc32c(crc32c_bitwise({3, 0, 0, 0, 0, 0, 0, 0})));
  EXPECT_EQ(framed.substr(12, 3), "abc");
  EXPECT_EQ(u32_at(15), mask_crc32c(crc32c_bitwise({'a', 'b', 'c'})));
}

TEST(TfRecord, ReaderFindsEveryRecordAndRejectsCorruption) {
  TempDir dir;
  const fs::path path = dir.path() / "records";
  {
    TfRecordWriter w(path);
    w.write("first");
    w.write("");
    w.write(std::string(1000, 'x'));
    w.flush();
    EXPECT_EQ(w.bytes_written(), 3 * 16 + 5 + 1000);
  }
  EXPECT_EQ(testing::read_tfrecords(path), (std::vector<std::string>{"first", "", std::string(1000, 'x')}));
  EXPECT_THROW(TfRecordWriter{path}, Error);  // never rewrites a file

  std::vector<uint8_t> bytes = read_file(path.string());
  bytes[14] ^= 0x01;  // a data byte of the first record
  write_file_atomic(path.string(), bytes);
  EXPECT_THROW(testing::read_tfrecords(path), Error);
  bytes[14] ^= 0x01;
  bytes.pop_back();  // a torn last record
  write_file_atomic(path.string(), bytes);
  EXPECT_THROW(testing::read_tfrecords(path), Error);
}

TEST(ValueHistogram, BucketsAreRightClosedAndMomentsExact) {
  const std::vector<float> v = {-1.f, 0.f, 0.5f, 1.f, std::nanf(""), INFINITY};
  ValueHistogram h = make_value_histogram(v, 4);
  EXPECT_EQ(h.min, -1.0);
  EXPECT_EQ(h.max, 1.0);
  EXPECT_EQ(h.count, 4.0);
  EXPECT_EQ(h.sum, 0.5);
  EXPECT_EQ(h.sum_squares, 2.25);
  EXPECT_EQ(h.bucket_limits, (std::vector<double>{-0.5, 0.0, 0.5, 1.0}));
  EXPECT_EQ(h.bucket_counts, (std::vector<double>{1, 1, 1, 1}));

  h = make_value_histogram(std::vector<float>{2.f, 2.f, 2.f});
  EXPECT_EQ(h.bucket_limits, std::vector<double>{2.0});
  EXPECT_EQ(h.bucket_counts, std::vector<double>{3.0});
  h = make_value_histogram(std::vector<float>{});
  EXPECT_TRUE(h.bucket_limits.empty());
  EXPECT_EQ(h.count, 0.0);
}

TEST(PngHeader, ReadsSizeAndChannels) {
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(7, 13, CV_8UC1, cv::Scalar(9)), png));
  data::PngHeader h = data::read_png_header(png, "gray.png");
  EXPECT_EQ(h.width, 13);
  EXPECT_EQ(h.height, 7);
  EXPECT_EQ(h.channels, 1);
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(5, 6, CV_8UC3, cv::Scalar(1, 2, 3)), png));
  h = data::read_png_header(png, "rgb.png");
  EXPECT_EQ(h.width, 6);
  EXPECT_EQ(h.channels, 3);
  const std::vector<uint8_t> text = {'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g'};
  try {
    data::read_png_header(text, "notes.txt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt: expected a PNG file"), std::string::npos) << e.what();
  }
  // Found by fuzz_image_decode: a zero width (or one beyond 2^31 - 1, which came out negative)
  // was returned as the image's size.
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(5, 6, CV_8UC1, cv::Scalar(1)), png));
  for (uint32_t width : {0u, 0x80000000u}) {
    for (int b = 0; b < 4; ++b) png[16 + b] = static_cast<uint8_t>(width >> (24 - 8 * b));
    try {
      data::read_png_header(png, "odd.png");
      FAIL() << "expected an error for width " << width;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("odd.png: expected a PNG width and height from 1 to 2^31 - 1, found " +
                                           std::to_string(width) + " x 5"),
                std::string::npos) << e.what();
    }
  }
}

TEST(EventFileWriter, WritesFileVersionFirstThenSummariesAndSessionStart) {
  TempDir dir;
  fs::path first_path;
  {
    EventFileWriter w(dir.path() / "tb");
    first_path = w.path();
    SummaryValues values;
    values.scalars = {{"loss", 0.25f}, {"time/total", 1.5f}};
    std::vector<uint8_t> png;
    ASSERT_TRUE(cv::imencode(".png", cv::Mat(4, 6, CV_8UC1, cv::Scalar(200)), png));
    values.images.emplace_back("samples", EncodedImage{std::string(png.begin(), png.end()), 4, 6, 1});
    values.histograms.emplace_back("w", make_value_histogram(std::vector<float>{0.f, 1.f}, 2));
    w.write_summary(7, values);
    w.flush();
  }
  EXPECT_EQ(first_path.parent_path(), dir.path() / "tb");
  EXPECT_EQ(first_path.filename().string().rfind("events.out.tfevents.", 0), 0u) << first_path;
  std::vector<testing::TbEvent> events = testing::read_events(first_path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.6e9);
  EXPECT_EQ(events[1].step(), 7);
  ASSERT_EQ(events[1].summary().value_size(), 4);
  const Value& loss = events[1].summary().value(0);
  EXPECT_EQ(loss.tag(), "loss");
  EXPECT_EQ(loss.simple_value(), 0.25f);
  const Value& image = events[1].summary().value(2);
  EXPECT_EQ(image.tag(), "samples");
  EXPECT_EQ(image.image().height(), 4);
  EXPECT_EQ(image.image().width(), 6);
  EXPECT_EQ(image.image().colorspace(), 1);
  cv::Mat decoded = cv::imdecode(std::vector<uint8_t>(image.image().encoded_image_string().begin(),
                                                      image.image().encoded_image_string().end()),
                                 cv::IMREAD_UNCHANGED);
  EXPECT_EQ(decoded.rows, 4);
  EXPECT_EQ(decoded.at<uint8_t>(0, 0), 200);
  const auto& histo = events[1].summary().value(3).histo();
  EXPECT_EQ(histo.num(), 2.0);
  EXPECT_EQ(histo.bucket_limit_size(), 2);
  EXPECT_EQ(histo.bucket(1), 1.0);

  // A second writer starts a second file, sorted after the first, and leaves the first alone.
  const std::vector<uint8_t> before = read_file(first_path.string());
  {
    EventFileWriter w(dir.path() / "tb");
    EXPECT_NE(w.path(), first_path);
    w.write_session_start(5);
  }
  EXPECT_EQ(read_file(first_path.string()), before);
  std::vector<fs::path> files = event_files_in(dir.path() / "tb");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], first_path);
  events = testing::read_events(files[1]);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[1].session_log().status(), tensorboard_proto::SessionLog::START);
  EXPECT_EQ(events[1].step(), 5);
}

// metrics.jsonl, as step -> line.
std::map<int64_t, nlohmann::json> metrics_lines(const fs::path& path) {
  std::map<int64_t, nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    lines[j["step"].get<int64_t>()] = j;
  }
  return lines;
}

TEST(TensorBoardHook, ScalarsMatchMetricsJsonlAndImagesFollowTheSamples) {
  TempDir dir;
  auto est = std::make_unique<gan::GanEstimator>(testing::tiny_dcgan(),
                                                 distribute::make_one_device_strategy(Device::cpu()), 3);
  SampleHookOptions s;
  s.every_steps = 2;
  s.rows = 2;
  s.cols = 3;
  auto samples = std::make_shared<SampleHook>(dir.path(), s, testing::blob_batch(6, 99).images);
  TensorBoardHookOptions t;
  t.dir = dir.path() / "tb";
  t.scalar_every_steps = 1;
  t.image_every_steps = 2;
  t.samples_dir = samples->samples_dir();
  t.histogram_every_steps = 3;
  auto tb = std::make_shared<TensorBoardHook>(t);
  est->train(testing::blobs(4), 4, {std::make_shared<MetricsHook>(dir.path(), 1), samples, tb});

  std::vector<fs::path> files = event_files_in(dir.path() / "tb");
  ASSERT_EQ(files.size(), 1u);
  std::vector<testing::TbEvent> events = testing::read_events(files[0]);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  auto scalars = testing::scalars_by_step(events);
  auto lines = metrics_lines(dir.path() / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& [step, line] : lines) {
    ASSERT_TRUE(scalars.count(step)) << step;
    const auto& at = scalars[step];
    EXPECT_EQ(at.at("discriminator_loss"), line["discriminator_loss"].get<float>());
    EXPECT_EQ(at.at("generator_loss"), line["generator_loss"].get<float>());
    EXPECT_EQ(at.at("images_per_second"), line["images_per_second"].get<float>());
    EXPECT_EQ(at.at("time/compute"), line["time"]["compute"].get<float>());
    EXPECT_EQ(at.at("global_batch"), 4.f);
    EXPECT_EQ(at.at("learning_rate/generator"), static_cast<float>(est->replica(0).generator.optimizer->lr()));
    EXPECT_GT(at.at("learning_rate/discriminator"), 0.f);
    EXPECT_EQ(at.count("loss_scale/generator"), 0u);  // no loss scaling in this spec
  }
  std::map<std::string, std::vector<int64_t>> image_steps;
  int histograms = 0;
  for (const auto& e : events)
    for (const auto& v : e.summary().value()) {
      if (v.has_image()) {
        image_steps[v.tag()].push_back(e.step());
        EXPECT_EQ(v.image().height(), 2 + 2 * (8 + 2));  // 2 rows of 8-pixel images, padding 2
        EXPECT_EQ(v.image().width(), 2 + 3 * (8 + 2));
      }
      if (v.has_histo()) {
        EXPECT_EQ(e.step(), 3);
        EXPECT_GT(v.histo().num(), 0.0);
        ++histograms;
      }
    }
  EXPECT_EQ(image_steps["real"], std::vector<int64_t>{0});
  EXPECT_EQ(image_steps["samples"], (std::vector<int64_t>{2, 4}));
  EXPECT_GT(histograms, 4);  // weights and gradients of both networks

  // A resumed run appends a second file that opens with the restart marker at its first step.
  est->set_global_step(2);
  est->train(testing::blobs(4, 2), 4, {tb});
  files = event_files_in(dir.path() / "tb");
  ASSERT_EQ(files.size(), 2u);
  events = testing::read_events(files[1]);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[1].session_log().status(), tensorboard_proto::SessionLog::START);
  EXPECT_EQ(events[1].step(), 3);
  for (const auto& e : events)  // the real batch is in the first file only
    for (const auto& v : e.summary().value()) EXPECT_NE(v.tag(), "real");
  EXPECT_EQ(testing::scalars_by_step(events).begin()->first, 3);
}

TEST(MetricFileTail, ReadsEachWholeNewLineOnce) {
  TempDir dir;
  std::ofstream(dir.path() / "metric-fid.jsonl") << "{\"step\": 10, \"value\": 90.5}\n";
  MetricFileTail tail(dir.path());
  tail.skip_existing();
  EXPECT_TRUE(tail.read_new().empty());
  std::ofstream(dir.path() / "metric-fid.jsonl", std::ios::app) << "{\"step\": 20, \"value\": 70.25}\n{\"step\": 30, ";
  std::ofstream(dir.path() / "metric-kid.jsonl") << "{\"step\": 20, \"value\": 0.5}\n";
  std::ofstream(dir.path() / "metrics.jsonl") << "{\"step\": 20, \"value\": 1}\n";  // not a metric file
  std::vector<MetricValue> v = tail.read_new();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "fid");
  EXPECT_EQ(v[0].step, 20);
  EXPECT_EQ(v[0].value, 70.25);
  EXPECT_EQ(v[1].name, "kid");
  EXPECT_TRUE(tail.read_new().empty());  // the half-written line waits
  std::ofstream(dir.path() / "metric-fid.jsonl", std::ios::app) << "\"value\": 60}\n";
  v = tail.read_new();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].step, 30);
  EXPECT_EQ(v[0].value, 60.0);
}

// Appends a metric-fid.jsonl line at every second step, as a metric hook would.
class FakeFidHook : public gan::Hook {
 public:
  explicit FakeFidHook(fs::path dir) : dir_(std::move(dir)) {}
  void after_step(gan::GanEstimator&, const gan::StepResults& r) override {
    if (r.step % 2 == 0) std::ofstream(dir_ / "metric-fid.jsonl", std::ios::app) << "{\"step\": " << r.step << ", \"value\": " << 100 - r.step << "}\n";
  }

 private:
  fs::path dir_;
};

TEST(TensorBoardHook, ForwardsMetricFilesAsScalarsAtTheirSteps) {
  TempDir dir;
  auto est = std::make_unique<gan::GanEstimator>(testing::tiny_dcgan(),
                                                 distribute::make_one_device_strategy(Device::cpu()), 3);
  TensorBoardHookOptions t;
  t.dir = dir.path() / "tb";
  t.scalar_every_steps = 3;
  t.metrics_dir = dir.path();
  est->train(testing::blobs(4), 4, {std::make_shared<FakeFidHook>(dir.path()), std::make_shared<TensorBoardHook>(t)});
  const auto scalars = testing::scalars_by_step(testing::read_events(event_files_in(dir.path() / "tb").at(0)));
  EXPECT_EQ(scalars.at(2).at("metrics/fid"), 98.f);  // read at the summary step 3
  EXPECT_EQ(scalars.at(4).at("metrics/fid"), 96.f);  // read at the end
  EXPECT_EQ(scalars.at(3).count("metrics/fid"), 0u);
}

TEST(TensorBoardConfig, DefaultsWrittenBackAndStrict) {
  nlohmann::json section = nlohmann::json::object();
  HooksConfig c = parse_hooks_config(section, "hooks");
  EXPECT_TRUE(c.tensorboard.enabled);
  EXPECT_EQ(section["tensorboard"], (nlohmann::json{{"enabled", true}, {"dir", ""}, {"histogram_every_steps", 0}}));
  EXPECT_EQ(tensorboard_dir(c.tensorboard, "runs/a"), fs::path("runs/a/tb"));
  c.tensorboard.dir = "events";
  EXPECT_EQ(tensorboard_dir(c.tensorboard, "runs/a"), fs::path("runs/a/events"));
  c.tensorboard.dir = "/shared/tb/a";
  EXPECT_EQ(tensorboard_dir(c.tensorboard, "runs/a"), fs::path("/shared/tb/a"));

  auto error = [](const char* text) -> std::string {
    nlohmann::json s = nlohmann::json::parse(text);
    try {
      parse_hooks_config(s, "run.hooks");
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error(R"({"tensorboard": {"histograms": 5}})");
  EXPECT_NE(e.find("run.hooks.tensorboard.histograms: unknown key"), std::string::npos) << e;
  e = error(R"({"tensorboard": {"histogram_every_steps": -1}})");
  EXPECT_NE(e.find("run.hooks.tensorboard.histogram_every_steps"), std::string::npos) << e;
  e = error(R"({"tensorboard": {"enabled": "yes"}})");
  EXPECT_NE(e.find("run.hooks.tensorboard.enabled: expected true or false"), std::string::npos) << e;
}

}  // namespace
}  // namespace gantry::hooks
