// The report page (hooks/report_page.h) and its parts: base64, curve downsampling, SVG charts,
// the run record read from a model_dir, and a 100k-step run that stays small.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "base/error.h"
#include "core/base64.h"
#include "hooks/downsample_curve.h"
#include "hooks/report_config.h"
#include "hooks/report_page.h"
#include "hooks/run_record.h"
#include "hooks/svg_line_chart.h"
#include "support/temp_dir.h"

namespace gantry::hooks {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string encode(const std::string& s) { return base64_encode(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size())); }

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(DownsampleCurve, KeepsEndsAndSpikesWithinTheBudget) {
  std::vector<CurvePoint> points;
  for (int64_t s = 1; s <= 100000; ++s) points.emplace_back(s, std::sin(s * 1e-3));
  points[54321].second = 50.0;  // a spike
  points[65432].second = -50.0;
  const std::vector<CurvePoint> down = downsample_curve(points, 2000);
  EXPECT_LE(down.size(), 2000u);
  EXPECT_GE(down.size(), 1900u);
  EXPECT_EQ(down.front(), points.front());
  EXPECT_EQ(down.back(), points.back());
  EXPECT_NE(std::find(down.begin(), down.end(), points[54321]), down.end());
  EXPECT_NE(std::find(down.begin(), down.end(), points[65432]), down.end());
  EXPECT_TRUE(std::is_sorted(down.begin(), down.end(), [](auto& a, auto& b) { return a.first < b.first; }));
  const std::vector<CurvePoint> short_curve(points.begin(), points.begin() + 10);
  EXPECT_EQ(downsample_curve(short_curve, 2000), short_curve);
  EXPECT_THROW(downsample_curve(points, 3), Error);
}

TEST(SvgLineChart, DrawsOneLinePerCurveWithTicksAndTooltips) {
  ChartLine a{"generator", "#2563eb", false, {{0, 1.0}, {50, 0.5}, {100, 0.25}}};
  ChartLine b{"d <&>", "#dc2626", true, {{0, 2.0}, {100, NAN}, {100, 1.5}}};
  const std::string svg = svg_line_chart({a, b});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 2u);
  EXPECT_NE(svg.find("d &lt;&amp;&gt; at step 100: 1.5"), std::string::npos) << svg;
  EXPECT_NE(svg.find("generator at step 100: 0.25"), std::string::npos);
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);  // an x tick at the last step
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(svg_line_chart({}).find("no data yet"), std::string::npos);
  EXPECT_EQ(html_escape("a\"b'<c>&"), "a&quot;b&#39;&lt;c&gt;&amp;");
}

// A model_dir with metrics.jsonl, a metric file, sample grids and a checkpoint pointer.
void write_fake_run(const fs::path& dir, int64_t steps, int64_t every) {
  fs::create_directories(dir / "samples");
  fs::create_directories(dir / "checkpoints");
  std::ofstream(dir / "config.json") << R"({"model_dir": "x", "train": {"steps": )" << steps
                                     << R"(, "global_batch_size": 64}, "strategy": {"type": "mirrored", "devices": "cpu:0,cpu:1"}})";
  std::ofstream metrics(dir / "metrics.jsonl");
  for (int64_t s = every; s <= steps; s += every)
    metrics << R"({"step": )" << s << R"(, "discriminator_loss": )" << 1.0 + 1.0 / s << R"(, "generator_loss": 0.7, )"
            << R"("discriminator_components": {"gradient_penalty": 0.1}, "generator_components": {}, )"
            << R"("global_batch": 64, "images_per_second": 1000, "time": {"input_wait": 0.001, "compute": 0.05, )"
            << R"("all_reduce": 0, "update": 0.002, "total": 0.06}})" << "\n";
  metrics << R"({"step": )";  // the torn last line of a crash
  std::ofstream(dir / "metric-fid.jsonl") << "{\"step\": 100, \"value\": 80.5}\n{\"step\": 50, \"value\": 120}\n";
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(20, 30, CV_8UC1, cv::Scalar(128)), png));
  for (int64_t s : {0, 10, 20, 30}) {
    const fs::path file = dir / "samples" / (s == 0 ? std::string("real.png") : "step-" + std::to_string(s) + ".png");
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  }
  std::ofstream(dir / "samples" / "step-x.png") << "not a grid name";
  std::ofstream(dir / "checkpoints" / "latest") << "ckpt-30.safetensors\n";
}

TEST(RunRecord, ReadsEveryFileOfAModelDir) {
  TempDir dir;
  write_fake_run(dir.path(), 30, 10);
  RunRecord r = load_run_record(dir.path());
  EXPECT_EQ(r.last_step, 30);
  ASSERT_EQ(r.scalars.at("discriminator_loss").size(), 3u);
  EXPECT_EQ(r.scalars.at("time/compute").back(), (CurvePoint{30, 0.05}));
  EXPECT_EQ(r.scalars.at("discriminator_components/gradient_penalty").size(), 3u);
  EXPECT_EQ(r.scalars.count("step"), 0u);
  EXPECT_EQ(r.metrics.at("fid"), (std::vector<CurvePoint>{{50, 120}, {100, 80.5}}));  // sorted by step
  ASSERT_EQ(r.sample_grids.size(), 3u);
  EXPECT_EQ(r.sample_grids[2].first, 30);
  EXPECT_EQ(r.real_grid.filename(), "real.png");
  EXPECT_EQ(r.latest_checkpoint, "ckpt-30.safetensors");
  EXPECT_EQ(r.config["train"]["steps"], 30);
  EXPECT_THROW(load_run_record(dir.path() / "missing"), Error);
}

TEST(RunRecord, ADeviceInPlaceOfMetricsIsNotRead) {
  if (!fs::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  TempDir dir;
  fs::create_symlink("/dev/zero", dir.path() / "metrics.jsonl");  // an endless "file"
  fs::create_symlink("/dev/zero", dir.path() / "metric-fid.jsonl");
  RunRecord r = load_run_record(dir.path());
  EXPECT_TRUE(r.scalars.empty());
  EXPECT_TRUE(r.metrics.empty());
}

TEST(ReportPage, ShowsEveryPanelOfOneRun) {
  TempDir dir;
  write_fake_run(dir.path(), 30, 10);
  InlineImages images;
  ReportPageOptions o;
  o.live = true;
  const std::string page = render_report_page({load_run_record(dir.path())}, o, images);
  for (const char* chart : {"losses", "components", "images_per_second", "time", "metric-fid"})
    EXPECT_NE(page.find("data-chart=\"" + std::string(chart) + "\""), std::string::npos) << chart;
  EXPECT_EQ(count(page, "<img src=\"data:image/png;base64,"), 4u);  // real + three grids
  EXPECT_NE(page.find("alt=\"step 30\""), std::string::npos);
  EXPECT_NE(page.find("ckpt-30.safetensors"), std::string::npos);
  EXPECT_NE(page.find("gan_sample --model-dir " + dir.str()), std::string::npos);
  EXPECT_NE(page.find("mirrored on cpu:0,cpu:1 (2 replicas per worker)"), std::string::npos);
  EXPECT_NE(page.find("http-equiv=\"refresh\" content=\"30\""), std::string::npos);
  EXPECT_NE(page.find("step 30 of 30"), std::string::npos);
  // Self-contained: nothing is fetched (the SVG namespace is a name, not a fetch).
  for (const char* fetch : {"src=\"http", "href=\"http", "url(", "@import", "<link"})
    EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;
  o.live = false;
  o.max_sample_grids = 2;
  const std::string final_page = render_report_page({load_run_record(dir.path())}, o, images);
  EXPECT_EQ(final_page.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(count(final_page, "<img src=\"data:image/png;base64,"), 3u);  // real + first and latest
  EXPECT_NE(final_page.find("alt=\"step 10\""), std::string::npos);
  EXPECT_NE(final_page.find("alt=\"step 30\""), std::string::npos);
}

TEST(ReportPage, ComparesRunsWithALinePerRun) {
  TempDir a("gantry_run_a"), b("gantry_run_b");
  write_fake_run(a.path(), 30, 10);
  write_fake_run(b.path(), 20, 5);
  InlineImages images;
  const std::string page = render_report_page({load_run_record(a.path()), load_run_record(b.path())}, {}, images);
  EXPECT_NE(page.find("data-chart=\"losses/discriminator\""), std::string::npos);
  EXPECT_NE(page.find("data-chart=\"losses/generator\""), std::string::npos);
  const size_t chart = page.find("data-chart=\"losses/discriminator\"");
  const std::string panel = page.substr(chart, page.find("</figure>", chart) - chart);
  EXPECT_EQ(count(panel, "<polyline"), 2u);
  EXPECT_NE(panel.find(a.path().filename().string()), std::string::npos);
  EXPECT_NE(panel.find(b.path().filename().string()), std::string::npos);
}

TEST(ReportPage, AHundredThousandStepRunStaysSmall) {
  TempDir dir;
  write_fake_run(dir.path(), 100000, 5);  // 20000 summary steps
  InlineImages images;
  const std::string page = render_report_page({load_run_record(dir.path())}, {}, images);
  // 10 curves of <= 2000 points at ~12 bytes each, plus four tiny grids.
  EXPECT_LT(page.size(), 400u * 1024u) << page.size();
  const size_t chart = page.find("data-chart=\"losses\"");
  const std::string panel = page.substr(chart, page.find("</polyline>", chart) - chart);
  EXPECT_LE(count(panel, ","), 2000u + 10u);
}

TEST(ReportConfig, DefaultsAndErrors) {
  nlohmann::json section = nlohmann::json::object();
  ReportConfig c = parse_report_config(section, "hooks.report");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(section, (nlohmann::json{{"enabled", true}, {"max_points", 2000}, {"max_sample_grids", 12}, {"refresh_seconds", 30}}));
  nlohmann::json bad = {{"max_points", 2}};
  try {
    parse_report_config(bad, "hooks.report");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hooks.report.max_points: expected an integer >= 4, found 2"), std::string::npos) << e.what();
  }
  bad = {{"colour", "blue"}};
  EXPECT_THROW(parse_report_config(bad, "hooks.report"), Error);
}

}  // namespace
}  // namespace gantry::hooks
