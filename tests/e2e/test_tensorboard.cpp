// gan_train's TensorBoard event files, read back with the tests' own reader (framing and both
// CRCs checked): file_version first, every scalar of metrics.jsonl at the same step with the same
// value, sample grids and the real batch as PNG images of the files' size, and a resume from an
// earlier checkpoint that appends a second file opening with a SessionLog START, after which
// TensorBoard's purge rule leaves exactly metrics.jsonl's steps.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/file_io.h"
#include "e2e/gan_train_app.h"
#include "hooks/event_file_writer.h"
#include "support/event_file_reader.h"

namespace gantry::testing::e2e {
namespace {

using gantry::tensorboard_proto::SessionLog;

// metrics.jsonl's numbers as tag -> value per step (tags are JSON paths joined by '/').
void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string tag = prefix.empty() ? key : prefix + "/" + key;
    if (value.is_object())
      flatten(value, tag, out);
    else if (tag != "step")
      out[tag] = value;
  }
}

std::map<int64_t, std::map<std::string, nlohmann::json>> metrics_by_step(const fs::path& file) {
  std::map<int64_t, std::map<std::string, nlohmann::json>> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    flatten(j, "", out[j["step"].get<int64_t>()]);
  }
  return out;
}

// The events of every file in TensorBoard's order, with its purge rule applied: a SessionLog
// START at step S drops what came before it at steps >= S.
std::vector<TbEvent> events_as_tensorboard_sees_them(const fs::path& dir) {
  std::vector<TbEvent> kept;
  for (const fs::path& file : hooks::event_files_in(dir))
    for (TbEvent& e : read_events(file)) {
      if (e.has_session_log() && e.session_log().status() == SessionLog::START)
        std::erase_if(kept, [&](const TbEvent& k) { return !k.has_file_version() && k.step() >= e.step(); });
      kept.push_back(std::move(e));
    }
  return kept;
}

// Every scalar of metrics.jsonl is in the events at its step with the same value (as f32), and
// the events hold scalars at no other step.
void expect_scalars_match_metrics(const std::vector<TbEvent>& events, const fs::path& metrics_file) {
  const auto scalars = scalars_by_step(events);
  const auto metrics = metrics_by_step(metrics_file);
  ASSERT_FALSE(metrics.empty());
  size_t compared = 0;
  for (const auto& [step, values] : metrics) {
    ASSERT_TRUE(scalars.count(step)) << "no scalars at step " << step;
    for (const auto& [tag, value] : values) {
      ASSERT_TRUE(scalars.at(step).count(tag)) << tag << " missing at step " << step;
      const float found = scalars.at(step).at(tag);
      if (value.is_null())
        EXPECT_TRUE(std::isnan(found)) << tag;
      else
        EXPECT_EQ(found, value.get<float>()) << tag << " at step " << step;
      ++compared;
    }
    EXPECT_TRUE(scalars.at(step).count("learning_rate/generator"));
  }
  EXPECT_GE(compared, metrics.size() * 10);  // losses, images/s, global batch, five times
  for (const auto& [step, _] : scalars) EXPECT_TRUE(metrics.count(step)) << "scalars at step " << step;
}

TEST_F(GanTrainApp, TensorBoardEventsHoldEveryScalarAndImage) {
  Result r = run("--config " + write_config("run.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path run_dir = dir_ / "run", tb = run_dir / "tb";
  EXPECT_NE(r.output.find("tensorboard --logdir " + tb.string()), std::string::npos) << r.output;
  const std::vector<fs::path> files = hooks::event_files_in(tb);
  ASSERT_EQ(files.size(), 1u);
  const std::vector<TbEvent> events = read_events(files[0]);
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  for (size_t i = 1; i < events.size(); ++i) EXPECT_FALSE(events[i].has_file_version());
  expect_scalars_match_metrics(events, run_dir / "metrics.jsonl");

  std::map<std::string, std::vector<int64_t>> image_steps;
  for (const TbEvent& e : events)
    for (const auto& v : e.summary().value()) {
      if (!v.has_image()) continue;
      image_steps[v.tag()].push_back(e.step());
      const std::string& png = v.image().encoded_image_string();
      cv::Mat decoded = cv::imdecode(std::vector<uint8_t>(png.begin(), png.end()), cv::IMREAD_UNCHANGED);
      ASSERT_FALSE(decoded.empty()) << v.tag() << " at step " << e.step() << " is not a PNG";
      const fs::path file = run_dir / "samples" / (v.tag() == "real" ? "real.png" : "step-" + std::to_string(e.step()) + ".png");
      cv::Mat on_disk = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
      EXPECT_EQ(decoded.rows, v.image().height());
      EXPECT_EQ(decoded.cols, v.image().width());
      EXPECT_EQ(decoded.channels(), v.image().colorspace());
      EXPECT_EQ(decoded.size(), on_disk.size()) << file;
      EXPECT_EQ(cv::norm(decoded, on_disk, cv::NORM_INF), 0.0) << file;
    }
  EXPECT_EQ(image_steps["real"], std::vector<int64_t>{0});
  EXPECT_EQ(image_steps["samples"], (std::vector<int64_t>{2, 4}));
}

TEST_F(GanTrainApp, TensorBoardResumeFromAnEarlierStepAppendsAFileWithARestartMarker) {
  const std::string config = write_config("run.json", {{"hooks", {{"tensorboard", {{"dir", "events"}}}}}});
  ASSERT_EQ(run("--config " + config).code, 0);
  const fs::path run_dir = dir_ / "run", tb = run_dir / "events";
  ASSERT_EQ(hooks::event_files_in(tb).size(), 1u);
  const std::vector<uint8_t> first_file = read_file(hooks::event_files_in(tb)[0].string());
  // Go back to the checkpoint of step 2, as if the run had died before saving step 4.
  fs::remove(run_dir / "checkpoints" / "ckpt-4.safetensors");
  std::ofstream(run_dir / "checkpoints" / "latest") << "ckpt-2.safetensors\n";
  Result r = run("--config " + config + " --steps 6");
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_NE(r.output.find("at step 2"), std::string::npos) << r.output;

  const std::vector<fs::path> files = hooks::event_files_in(tb);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(read_file(files[0].string()), first_file);  // old events are never rewritten
  const std::vector<TbEvent> second = read_events(files[1]);
  ASSERT_GE(second.size(), 2u);
  EXPECT_EQ(second[0].file_version(), "brain.Event:2");
  ASSERT_TRUE(second[1].has_session_log());
  EXPECT_EQ(second[1].session_log().status(), SessionLog::START);
  EXPECT_EQ(second[1].step(), 3);
  // Steps 3 and 4 are in both files; after the purge each is there once, as in metrics.jsonl.
  expect_scalars_match_metrics(events_as_tensorboard_sees_them(tb), run_dir / "metrics.jsonl");
  const auto all = scalars_by_step(events_as_tensorboard_sees_them(tb));
  EXPECT_EQ(all.rbegin()->first, 6);
}

}  // namespace
}  // namespace gantry::testing::e2e
