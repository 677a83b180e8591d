#include "hooks/sweep_page.h"

#include <algorithm>
#include <cmath>

#include "core/json_reader.h"
#include "hooks/report_html.h"
#include "hooks/svg_line_chart.h"

namespace gantry::hooks {

namespace {

// summary.json's keys (core/config_key.h), as python/gantry/sweep/summary.py writes them.
constexpr ConfigKey kTrialKeys[] = {
    int_key("number", "", "the trial's number").into<&SweepTrialRecord::number>(),
    string_key("state", R"("running")", "the trial's state").one_of("complete, pruned, failed, running, waiting")
        .into<&SweepTrialRecord::state>(),
    array_key("params", "[]", "[[key path, value], ...]"),
    array_key("rung_values", "[]", "[[images, value], ...] at the rungs reached"),
    array_key("curve", "[]", "[[images, value], ...] at every evaluation"),
    any_key("value", "", "the final or last value, a number or null").documented_default("absent"),
    int_key("images", "0", "images trained so far").at_least(0).into<&SweepTrialRecord::images>(),
    number_key("cpu_seconds", "0", "of its gan_train processes").into<&SweepTrialRecord::cpu_seconds>(),
    string_key("reason", R"("")", "why it failed").into<&SweepTrialRecord::reason>(),
    string_key("model_dir", R"("")", "its run's folder").into<&SweepTrialRecord::model_dir>(),
};
constexpr ConfigKey kSweepKeys[] = {
    string_key("name", "", "the study's name").into<&SweepRecord::name>(),
    string_key("metric", "", "what the trials are ranked by").into<&SweepRecord::metric>(),
    string_key("direction", R"("minimize")", "whether lower or higher is better").one_of("minimize, maximize"),
    array_key("rungs", "[]", "images seen at which the metric decides"),
    int_key("budget_images", "0", "a trial's full budget").at_least(0).into<&SweepRecord::budget_images>(),
    int_key("planned_trials", "0", "the trials the sweep will run").at_least(0).into<&SweepRecord::planned_trials>(),
    array_key("trials", "[]", "the trials (above)"),
    any_key("best", "", "the best trial's number or null").documented_default("absent"),
    string_key("best_config_file", R"("")", "best.json's path").into<&SweepRecord::best_config_file>(),
    any_key("best_config", "", "the best trial's config").documented_default("absent"),
    array_key("settings", "[]", "[[name, text], ...] shown as a table"),
    bool_key("live", "false", "trials still run").into<&SweepRecord::live>(),
    int_key("refresh_seconds", "30", "the live page's reload interval").at_least(0).into<&SweepRecord::refresh_seconds>(),
};

// An optional key without a default: its value, or null when absent.
nlohmann::json read_optional(JsonReader& r, std::string_view key) {
  return r.has(std::string(key)) ? r.read(key) : nlohmann::json();
}

// [[images, value], ...] at `key`.
std::vector<CurvePoint> read_points(JsonReader& r, const std::string& key) {
  std::vector<CurvePoint> points;
  const nlohmann::json& list = r.read(key);
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& p = list[i];
    GANTRY_CHECK(p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number(), r.key_path(key), "[",
                 i, "]: expected [images, value], found ", describe_json(p));
    points.emplace_back(p[0].get<int64_t>(), p[1].get<double>());
  }
  return points;
}

std::vector<std::pair<std::string, std::string>> read_texts(JsonReader& r, const std::string& key) {
  std::vector<std::pair<std::string, std::string>> texts;
  // Pairs in the order given ([[name, value], ...]): the driver's order is the reader's.
  for (const nlohmann::json& p : r.read(key)) {
    GANTRY_CHECK(p.is_array() && p.size() == 2 && p[0].is_string(), r.key_path(key),
                 ": expected [[name, text], ...], found an entry ", describe_json(p));
    texts.emplace_back(p[0].get<std::string>(), p[1].is_string() ? p[1].get<std::string>() : p[1].dump());
  }
  return texts;
}

SweepTrialRecord read_trial(nlohmann::json& entry, const std::string& path) {
  JsonReader r(entry, path, kTrialKeys);
  SweepTrialRecord t;
  r.read_into(t);
  t.params = read_texts(r, "params");
  t.rung_values = read_points(r, "rung_values");
  t.curve = read_points(r, "curve");
  if (const nlohmann::json value = read_optional(r, "value"); value.is_number()) t.value = value.get<double>();
  r.finish();
  return t;
}

bool is_finished(const SweepTrialRecord& t) { return t.state == "complete" || t.state == "pruned" || t.state == "failed"; }

std::string optional_number(const std::optional<double>& v) { return v ? format_report_number(*v) : "–"; }

const SweepTrialRecord* find_trial(const SweepRecord& s, std::optional<int64_t> number) {
  if (!number) return nullptr;
  for (const SweepTrialRecord& t : s.trials)
    if (t.number == *number) return &t;
  return nullptr;
}

std::string kimg(int64_t images) { return format_report_number(double(images) / 1000) + " kimg"; }

// CPU time in the unit that reads best: seconds, minutes or hours.
std::string cpu_time(double seconds) {
  if (seconds < 120) return format_report_number(seconds) + " s";
  if (seconds < 7200) return format_report_number(seconds / 60) + " min";
  return format_report_number(seconds / 3600) + " h";
}

// A parameter's value in the table: numbers to 4 digits (the best config shows them in full).
std::string short_value(const std::string& json_text) {
  const nlohmann::json v = nlohmann::json::parse(json_text, nullptr, false);
  return v.is_number_float() ? format_report_number(v.get<double>()) : json_text;
}

std::string summary_section(const SweepRecord& s) {
  const auto finished = std::count_if(s.trials.begin(), s.trials.end(), is_finished);
  int64_t images = 0;
  double cpu = 0;
  for (const SweepTrialRecord& t : s.trials) {
    images += t.images;
    cpu += t.cpu_seconds;
  }
  std::string html = "<section id=\"summary\" class=\"tiles\">";
  html += report_tile("trials finished", std::to_string(finished) + " of " + std::to_string(s.planned_trials));
  const SweepTrialRecord* best = find_trial(s, s.best);
  html += report_tile("best " + s.metric, best ? optional_number(best->value) + " (#" + std::to_string(best->number) + ")" : "–");
  html += report_tile("images trained", kimg(images));
  // The yardstick of pruning: what every planned trial at its full budget would have trained.
  const int64_t grid = s.planned_trials * s.budget_images;
  if (grid > 0) html += report_tile("of a full-budget sweep", format_report_number(100.0 * double(images) / double(grid)) + " %");
  html += report_tile("CPU time", cpu_time(cpu));
  return html + "</section>\n";
}

std::string chart_section(const SweepRecord& s) {
  std::vector<ChartLine> lines;
  std::vector<std::string> legend;
  for (size_t i = 0; i < s.trials.size(); ++i) {
    const SweepTrialRecord& t = s.trials[i];
    if (t.curve.empty()) continue;
    const std::string label = std::string("#") + std::to_string(t.number) + " " + t.state;
    const bool dashed = t.state != "complete" && t.state != "running";
    lines.push_back({label, report_color(i), dashed, t.curve});
    legend.push_back(legend_entry(report_color(i), dashed, label, t.curve));
  }
  ChartOptions options;
  options.x_name = "images";
  std::string html = "<section id=\"curves\"><h2>" + html_escape(s.metric) + " against images seen (" +
                     (s.maximize ? "higher" : "lower") + " is better)</h2><div class=\"charts\">\n";
  html += chart_panel(s.metric + " of every trial", "sweep-" + s.metric, lines, legend, options);
  return html + "</div></section>\n";
}

std::string trials_section(const SweepRecord& s) {
  std::vector<std::string> params;
  for (const SweepTrialRecord& t : s.trials)
    for (const auto& [name, _] : t.params)
      if (std::find(params.begin(), params.end(), name) == params.end()) params.push_back(name);
  std::string html = "<section id=\"trials\"><h2>Trials</h2><table class=\"kv\"><tr><th>#</th><th>state</th>";
  for (const std::string& p : params) html += "<th>" + html_escape(p) + "</th>";
  for (int64_t rung : s.rungs) html += "<th>" + html_escape(s.metric) + " @ " + html_escape(kimg(rung)) + "</th>";
  html += "<th>images</th><th>CPU s</th><th>note</th><th>model_dir</th></tr>\n";
  for (const SweepTrialRecord& t : s.trials) {
    const bool best = s.best && *s.best == t.number;
    html += std::string("<tr data-trial=\"") + std::to_string(t.number) + "\"" + (best ? " class=\"best\"" : "") +
            "><td class=\"num\">" + std::to_string(t.number) + "</td><td><span class=\"state " + html_escape(t.state) +
            "\">" + html_escape(t.state) + "</span></td>";
    for (const std::string& p : params) {
      auto it = std::find_if(t.params.begin(), t.params.end(), [&](const auto& kv) { return kv.first == p; });
      html += "<td class=\"num\">" + (it == t.params.end() ? std::string("–") : html_escape(short_value(it->second))) + "</td>";
    }
    for (int64_t rung : s.rungs) {
      auto it = std::find_if(t.rung_values.begin(), t.rung_values.end(), [&](const CurvePoint& p) { return p.first == rung; });
      html += "<td class=\"num\">" + (it == t.rung_values.end() ? std::string("–") : format_report_number(it->second)) + "</td>";
    }
    html += "<td class=\"num\">" + html_escape(kimg(t.images)) + "</td><td class=\"num\">" +
            format_report_number(t.cpu_seconds) + "</td><td>" + html_escape(best ? "best" : t.reason) + "</td><td>" +
            html_escape(t.model_dir) + "</td></tr>\n";
  }
  return html + "</table></section>\n";
}

std::string best_section(const SweepRecord& s) {
  const SweepTrialRecord* best = find_trial(s, s.best);
  std::string html = "<section id=\"best\"><h2>Best config</h2>";
  if (!best) return html + "<p>No trial has completed yet.</p></section>\n";
  html += "<table class=\"kv\">";
  html += report_row("trial", std::string("#") + std::to_string(best->number));
  html += report_row(s.metric, optional_number(best->value));
  for (const auto& [name, value] : best->params) html += report_row(name, value);
  html += report_row("model_dir", best->model_dir);
  html += "</table><h3>Train it</h3><pre>" +
          html_escape("# a fresh run of the best config\ngan_train --config " + s.best_config_file +
                      " --model-dir runs/best\n# or train the best trial further (it resumes from its last checkpoint)\n"
                      "gan_train --config " + best->model_dir + "/config.json --steps N") +
          "</pre>";
  if (!s.best_config.is_null())
    html += "<details><summary>" + html_escape(s.best_config_file) + "</summary><pre>" +
            html_escape(s.best_config.dump(2)) + "</pre></details>";
  return html + "</section>\n";
}

std::string settings_section(const SweepRecord& s) {
  std::string html = "<section id=\"settings\"><h2>Sweep</h2><table class=\"kv\">";
  for (const auto& [name, value] : s.settings) html += report_row(name, value);
  return html + "</table></section>\n";
}

}  // namespace

SweepRecord parse_sweep_record(const nlohmann::json& summary) {
  nlohmann::json copy = summary;
  GANTRY_CHECK(copy.is_object(), "sweep summary: expected an object, found ", describe_json(copy));
  JsonReader r(copy, "sweep summary", kSweepKeys);
  SweepRecord s;
  r.read_into(s);
  s.maximize = r.read_string("direction") == "maximize";
  for (const nlohmann::json& rung : r.read("rungs")) {
    GANTRY_CHECK(rung.is_number_integer(), r.key_path("rungs"), ": expected image counts, found ", describe_json(rung));
    s.rungs.push_back(rung.get<int64_t>());
  }
  nlohmann::json& trials = r.read("trials");
  for (size_t i = 0; i < trials.size(); ++i) s.trials.push_back(read_trial(trials[i], r.key_path("trials") + "[" + std::to_string(i) + "]"));
  const nlohmann::json best = read_optional(r, "best");
  GANTRY_CHECK(best.is_null() || best.is_number_integer(), r.key_path("best"), ": expected a trial number or null, found ",
               describe_json(best));
  if (best.is_number_integer()) s.best = best.get<int64_t>();
  s.best_config = read_optional(r, "best_config");
  s.settings = read_texts(r, "settings");
  r.finish();
  return s;
}

std::string render_sweep_page(const SweepRecord& s) {
  const auto finished = std::count_if(s.trials.begin(), s.trials.end(), is_finished);
  const auto count = [&](const char* state) {
    return std::count_if(s.trials.begin(), s.trials.end(), [&](const SweepTrialRecord& t) { return t.state == state; });
  };
  std::string subtitle = "sweep of " + html_escape(s.metric) + " · " + std::to_string(finished) + " of " +
                         std::to_string(s.planned_trials) + " trials finished (" + std::to_string(count("complete")) +
                         " complete, " + std::to_string(count("pruned")) + " pruned, " + std::to_string(count("failed")) +
                         " failed) · ";
  subtitle += s.live ? "<span class=\"live\">running</span> (this page reloads every " + std::to_string(s.refresh_seconds) + " s)"
                     : std::string("finished or stopped");
  subtitle += " · updated " + utc_now_text();
  std::string html = report_page_start(s.name, "sweep", subtitle, s.live ? s.refresh_seconds : 0);
  html += summary_section(s);
  html += chart_section(s);
  html += trials_section(s);
  html += best_section(s);
  html += settings_section(s);
  html += "</main>\n" + report_page_footer() +
          "<script>document.documentElement.setAttribute('data-report-ready','1');</script>\n</body></html>\n";
  return html;
}

}  // namespace gantry::hooks
