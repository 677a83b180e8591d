// The report page in a real browser (label browser; skipped when Debian's chromium is not
// installed): headless Chromium opens report.html of a short gan_train run, and gan_report's
// comparison of two runs, from file:// with every host name unresolvable (offline). Checks: the
// script ran without an error (its ready marker and no error marker in the DOM, no console
// message in Chromium's log), the expected panels, curves and images are in the rendered DOM, and a
// screenshot has the dark header, the charts' blue curves and the sample grids (non-blank).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "e2e/gan_train_app.h"
#include "support/test_paths.h"

namespace gantry::testing::e2e {
namespace {

std::string chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(path)) return path;
  return "";
}

// Offline, sandbox off (tests run as root in CI), console messages logged to stderr.
std::string chromium_flags(const fs::path& profile) {
  return "--headless --disable-gpu --no-sandbox --no-first-run --disable-background-networking "
         "--disable-component-update --disable-sync --host-resolver-rules=\"MAP * ~NOTFOUND\" "
         "--user-data-dir=" + profile.string() + " --enable-logging=stderr --v=0 --virtual-time-budget=3000 ";
}

class ReportInChromium : public GanTrainApp {
 public:
  void SetUp() override {
    GanTrainApp::SetUp();
    if (IsSkipped()) return;
    browser_ = chromium();
    if (browser_.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  }

  // The rendered DOM of `page` and Chromium's log lines, together.
  Result dump_dom(const fs::path& page) {
    return run_app(browser_, chromium_flags(dir_ / "profile") + "--dump-dom file://" + page.string());
  }
  Result screenshot(const fs::path& page, const fs::path& png) {
    return run_app(browser_, chromium_flags(dir_ / "profile") + "--hide-scrollbars --window-size=1280,1800 --screenshot=" +
                                 png.string() + " file://" + page.string());
  }

  std::string browser_;
};

void expect_rendered_without_errors(const Result& r) {
  ASSERT_EQ(r.code, 0) << r.output;
  // The markers are attributes of <html> (the script's source names them too).
  const size_t html = r.output.find("<html");
  ASSERT_NE(html, std::string::npos) << r.output;
  const std::string html_tag = r.output.substr(html, r.output.find('>', html) - html);
  EXPECT_NE(html_tag.find("data-report-ready=\"1\""), std::string::npos) << "the page's script did not run to its end";
  EXPECT_EQ(html_tag.find("data-report-error"), std::string::npos) << html_tag;
  EXPECT_EQ(r.output.find("Uncaught"), std::string::npos) << r.output;
  // Chromium logs every console message (console.error too) as "...:INFO:CONSOLE:<line>] ...".
  EXPECT_EQ(r.output.find(":CONSOLE"), std::string::npos) << r.output;
}

// Offline by construction: the only URL in the page is the SVG namespace (a name, never fetched);
// and host names do not resolve while Chromium renders it (chromium_flags).
void expect_no_network_reference(const fs::path& page) {
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(count(html, "http:") + count(html, "https:"), count(html, "http://www.w3.org/2000/svg")) << page;
  EXPECT_EQ(count(html, "//cdn"), 0u);
}

TEST_F(ReportInChromium, RunReportRendersOfflineWithCurvesAndSamples) {
  Result train = run("--config " + write_config("run.json", {{"train", {{"steps", 6}}}}));
  ASSERT_EQ(train.code, 0) << train.output;
  const fs::path page = dir_ / "run" / "report.html";
  ASSERT_TRUE(fs::exists(page));
  EXPECT_NE(train.output.find("report: " + page.string()), std::string::npos) << train.output;

  expect_no_network_reference(page);
  const Result dom = dump_dom(page);
  expect_rendered_without_errors(dom);
  for (const char* chart : {"losses", "images_per_second", "time"})
    EXPECT_NE(dom.output.find("data-chart=\"" + std::string(chart) + "\""), std::string::npos) << chart;
  EXPECT_GE(count(dom.output, "<polyline"), 8u);  // 2 losses, images/s, 5 times
  EXPECT_EQ(count(dom.output, "<img src=\"data:image/png;base64,"), 4u);  // real and steps 2, 4, 6
  EXPECT_NE(dom.output.find("ckpt-6.safetensors"), std::string::npos);

  const fs::path shot = dir_ / "report.png";
  ASSERT_EQ(screenshot(page, shot).code, 0);
  cv::Mat image = cv::imread(shot.string(), cv::IMREAD_COLOR);  // BGR
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(image.cols, 1280);
  // The header band is dark (#111827), the page below it light.
  const cv::Scalar header = cv::mean(image(cv::Rect(0, 0, image.cols, 40)));
  EXPECT_LT(header[0] + header[1] + header[2], 3 * 60.0);
  // Curves: pixels of the first series' blue (#2563eb) and the second's red (#dc2626).
  cv::Mat blue, red;
  cv::inRange(image, cv::Scalar(215, 79, 17), cv::Scalar(255, 119, 57), blue);
  cv::inRange(image, cv::Scalar(18, 18, 200), cv::Scalar(58, 58, 240), red);
  EXPECT_GT(cv::countNonZero(blue), 300) << "no blue curve visible in " << shot;
  EXPECT_GT(cv::countNonZero(red), 300) << "no red curve visible in " << shot;
  // Not blank: a good share of the pixels differ from the background.
  cv::Mat gray, differs;
  cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);
  cv::absdiff(gray, cv::Scalar(250), differs);
  EXPECT_GT(cv::countNonZero(differs > 12), image.total() / 20);
  if (const char* keep = std::getenv("GANTRY_KEEP_SCREENSHOT")) fs::copy_file(shot, keep, fs::copy_options::overwrite_existing);
}

TEST_F(ReportInChromium, ComparisonOfTwoRunsRenders) {
  ASSERT_EQ(run("--config " + write_config("a.json", {{"model_dir", (dir_ / "a").string()}})).code, 0);
  ASSERT_EQ(run("--config " + write_config("b.json", {{"model_dir", (dir_ / "b").string()}, {"train", {{"seed", 4}}}})).code, 0);
  const fs::path page = dir_ / "compare.html";
  Result report = run_app(gan_report_app(), "--model-dir " + (dir_ / "a").string() + " --compare " + (dir_ / "b").string() +
                                                 " --out " + page.string());
  ASSERT_EQ(report.code, 0) << report.output;
  expect_no_network_reference(page);
  const Result dom = dump_dom(page);
  expect_rendered_without_errors(dom);
  const size_t chart = dom.output.find("data-chart=\"losses/generator\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string panel = dom.output.substr(chart, dom.output.find("</figure>", chart) - chart);
  EXPECT_EQ(count(panel, "<polyline"), 2u);  // one line per run
}

}  // namespace
}  // namespace gantry::testing::e2e
