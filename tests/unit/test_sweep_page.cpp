// The sweep page (hooks/sweep_page.h): a summary.json as the sweep driver writes it, rendered in
// the report page's style — the tiles, one curve per trial (pruned ones dashed), the trials table
// with parameters, states, rung values and failure reasons (escaped), the best config — and the
// errors of a malformed summary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "hooks/sweep_page.h"

namespace gantry::hooks {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json summary() {
  return nlohmann::json::parse(R"json({
    "name": "gamma", "metric": "fid", "direction": "minimize", "rungs": [1000, 3000, 9000],
    "budget_images": 9000, "planned_trials": 4,
    "trials": [
      {"number": 0, "state": "complete", "params": [["loss.penalties[0].gamma", "0.0032000000000000006"]],
       "rung_values": [[1000, 90.5], [3000, 60.25], [9000, 41.0]],
       "curve": [[1000, 90.5], [3000, 60.25], [9000, 41.0]], "value": 41.0, "images": 9000, "cpu_seconds": 120.5,
       "reason": "", "model_dir": "/s/trials/trial-0000"},
      {"number": 1, "state": "pruned", "params": [["loss.penalties[0].gamma", "0.0512"]],
       "rung_values": [[1000, 120.0]], "curve": [[1000, 120.0]], "value": 120.0, "images": 1000,
       "cpu_seconds": 14, "reason": "", "model_dir": "/s/trials/trial-0001"},
      {"number": 2, "state": "failed", "params": [["loss.penalties[0].gamma", "0.0002"]],
       "rung_values": [], "curve": [], "value": null, "images": 320, "cpu_seconds": 3,
       "reason": "stopped: non-finite discriminator loss <nan> at step 5", "model_dir": "/s/trials/trial-0002"},
      {"number": 3, "state": "running", "params": [["loss.penalties[0].gamma", "0.0008"]],
       "rung_values": [[1000, 95.0]], "curve": [[1000, 95.0]], "value": 95.0, "images": 1000, "cpu_seconds": 15,
       "reason": "", "model_dir": "/s/trials/trial-0003"}],
    "best": 0, "best_config_file": "/s/best.json", "best_config": {"loss": {"penalties": [{"type": "r1", "gamma": 0.0032}]}},
    "settings": [["sampler", "grid (seed 0)"], ["pruner", "hyperband (reduction factor 3)"]],
    "live": true, "refresh_seconds": 20})json");
}

TEST(SweepPage, ShowsEveryTrialItsRungsTheCurvesAndTheBestConfig) {
  const std::string html = render_sweep_page(parse_sweep_record(summary()));
  EXPECT_NE(html.find("<title>gamma · Gantry sweep</title>"), std::string::npos);
  EXPECT_NE(html.find("3 of 4 trials finished (1 complete, 1 pruned, 1 failed)"), std::string::npos);
  EXPECT_NE(html.find("<meta http-equiv=\"refresh\" content=\"20\">"), std::string::npos);  // live
  // tiles: best value with its trial; images trained 11.32 kimg of 36 kimg for every trial's full budget
  EXPECT_NE(html.find("<div class=\"v\">41 (#0)</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"v\">11.32 kimg</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"v\">31.44 %</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"v\">2.542 min</div>"), std::string::npos);  // 152.5 CPU seconds
  // one row per trial, the best marked, parameters and the metric at each rung (– where not reached)
  EXPECT_EQ(count(html, "<tr data-trial="), 4u);
  EXPECT_NE(html.find("<tr data-trial=\"0\" class=\"best\">"), std::string::npos);
  EXPECT_NE(html.find("<th>loss.penalties[0].gamma</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>fid @ 9 kimg</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">60.25</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">0.0032</td>"), std::string::npos);  // 4 digits in the table
  EXPECT_NE(html.find("<tr><th>loss.penalties[0].gamma</th><td>0.0032000000000000006</td></tr>"),
            std::string::npos);  // and in full for the best
  EXPECT_EQ(count(html, "<span class=\"state pruned\">pruned</span>"), 1u);
  EXPECT_EQ(count(html, "<span class=\"state failed\">failed</span>"), 1u);
  EXPECT_NE(html.find("non-finite discriminator loss &lt;nan&gt; at step 5"), std::string::npos);
  EXPECT_EQ(html.find("<nan>"), std::string::npos);
  // curves: the three trials with points (the failed one has none); the pruned one dashed
  EXPECT_EQ(count(html, "<polyline"), 3u);
  EXPECT_EQ(count(html, "stroke-dasharray"), 1u);
  EXPECT_NE(html.find("#0 complete at images 9000: 41"), std::string::npos);
  // the best config, ready to train
  EXPECT_NE(html.find("gan_train --config /s/best.json --model-dir runs/best"), std::string::npos);
  EXPECT_NE(html.find("&quot;gamma&quot;: 0.0032"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>sampler</th><td>grid (seed 0)</td></tr>"), std::string::npos);
}

TEST(SweepPage, AFinishedSweepDoesNotReloadAndOneWithoutACompleteTrialSaysSo) {
  nlohmann::json s = summary();
  s["live"] = false;
  s["best"] = nullptr;
  s["best_config"] = nullptr;
  const std::string html = render_sweep_page(parse_sweep_record(s));
  EXPECT_EQ(html.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_NE(html.find("finished or stopped"), std::string::npos);
  EXPECT_NE(html.find("No trial has completed yet."), std::string::npos);
  EXPECT_EQ(html.find("class=\"best\""), std::string::npos);
}

std::string error_of(const nlohmann::json& s) {
  try {
    (void)parse_sweep_record(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SweepPage, AMalformedSummaryNamesTheField) {
  nlohmann::json s = summary();
  s["trials"][1]["rung_values"][0] = {1000};
  EXPECT_NE(error_of(s).find("sweep summary.trials[1].rung_values[0]: expected [images, value], found [1000]"),
            std::string::npos)
      << error_of(s);
  s = summary();
  s["trials"][0]["state"] = "lost";
  EXPECT_NE(error_of(s).find("sweep summary.trials[0].state"), std::string::npos) << error_of(s);
  s = summary();
  s.erase("metric");
  EXPECT_NE(error_of(s).find("sweep summary.metric"), std::string::npos) << error_of(s);
  s = summary();
  s["colour"] = "blue";
  EXPECT_NE(error_of(s).find("sweep summary.colour: unknown key"), std::string::npos) << error_of(s);
}

}  // namespace
}  // namespace gantry::hooks
