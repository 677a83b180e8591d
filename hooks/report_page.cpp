#include "hooks/report_page.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "base/error.h"
#include "hooks/report_html.h"
#include "hooks/svg_line_chart.h"

namespace gantry::hooks {

namespace {

constexpr const char* kScript = R"(
(function(){
  var box=document.getElementById('lightbox'),img=box.querySelector('img'),cap=box.querySelector('.caption');
  document.querySelectorAll('.strip img').forEach(function(t){
    t.addEventListener('click',function(){img.src=t.src;cap.textContent=t.alt;box.hidden=false;});
  });
  box.addEventListener('click',function(){box.hidden=true;});
  document.addEventListener('keydown',function(e){if(e.key==='Escape')box.hidden=true;});
  document.documentElement.setAttribute('data-report-ready','1');
})();
)";

// The value at a JSON path as text, or "" when absent.
std::string config_text(const nlohmann::json& config, std::initializer_list<const char*> path) {
  const nlohmann::json* j = &config;
  for (const char* key : path) {
    if (!j->is_object() || !j->contains(key)) return "";
    j = &(*j)[key];
  }
  return j->is_string() ? j->get<std::string>() : j->dump();
}

const std::vector<CurvePoint>* scalar(const RunRecord& run, const std::string& tag) {
  auto it = run.scalars.find(tag);
  return it == run.scalars.end() || it->second.empty() ? nullptr : &it->second;
}

// The median of the last `n` values: a steady reading of a noisy quantity (images/s).
std::optional<double> recent_median(const std::vector<CurvePoint>* points, size_t n = 20) {
  if (!points || points->empty()) return std::nullopt;
  std::vector<double> v;
  for (size_t i = points->size() > n ? points->size() - n : 0; i < points->size(); ++i) v.push_back((*points)[i].second);
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::optional<double> last_value(const std::vector<CurvePoint>* points) {
  if (!points || points->empty()) return std::nullopt;
  return points->back().second;
}

// A quantity drawn in a chart: its label and where a run keeps its points.
struct Quantity {
  std::string label;
  std::function<const std::vector<CurvePoint>*(const RunRecord&)> points;
  bool dashed = false;  // a sum drawn over its parts (time/total over compute) stays visible
};

struct ChartGroup {
  std::string title;
  std::string id;  // data-chart attribute, for tests and links
  std::vector<Quantity> quantities;
};

Quantity scalar_quantity(const std::string& label, const std::string& tag) {
  return {label, [tag](const RunRecord& r) { return scalar(r, tag); }};
}

std::vector<ChartGroup> chart_groups(const std::vector<RunRecord>& runs) {
  std::vector<ChartGroup> groups;
  groups.push_back({"Losses", "losses",
                    {scalar_quantity("discriminator", "discriminator_loss"), scalar_quantity("generator", "generator_loss")}});
  ChartGroup components{"Loss components", "components", {}};
  std::vector<std::string> component_tags;
  for (const RunRecord& r : runs)
    for (const auto& [tag, _] : r.scalars)
      if ((tag.rfind("discriminator_components/", 0) == 0 || tag.rfind("generator_components/", 0) == 0) &&
          std::find(component_tags.begin(), component_tags.end(), tag) == component_tags.end())
        component_tags.push_back(tag);
  for (const std::string& tag : component_tags) {
    std::string label = tag;
    label.replace(0, tag.find('/') + 1, tag.rfind("discriminator", 0) == 0 ? "D " : "G ");
    components.quantities.push_back(scalar_quantity(label, tag));
  }
  if (!components.quantities.empty()) groups.push_back(components);
  groups.push_back({"Images per second", "images_per_second", {scalar_quantity("images/s", "images_per_second")}});
  ChartGroup time{"Time per step (seconds)", "time", {}};
  for (const char* part : {"total", "compute", "input_wait", "all_reduce", "update"})
    time.quantities.push_back(scalar_quantity(part, std::string("time/") + part));
  time.quantities.front().dashed = true;
  groups.push_back(time);
  std::vector<std::string> metric_names;
  for (const RunRecord& r : runs)
    for (const auto& [name, _] : r.metrics)
      if (std::find(metric_names.begin(), metric_names.end(), name) == metric_names.end()) metric_names.push_back(name);
  for (const std::string& name : metric_names)
    groups.push_back({"Metric: " + name, "metric-" + name,
                      {{name, [name](const RunRecord& r) {
                          auto it = r.metrics.find(name);
                          return it == r.metrics.end() || it->second.empty() ? nullptr : &it->second;
                        }}}});
  return groups;
}

std::string charts_section(const std::vector<RunRecord>& runs, const ReportPageOptions& o) {
  std::string html = "<section id=\"curves\"><h2>Training curves</h2><div class=\"charts\">\n";
  for (const ChartGroup& group : chart_groups(runs)) {
    if (runs.size() == 1) {
      std::vector<ChartLine> lines;
      std::vector<std::string> legend;
      for (size_t q = 0; q < group.quantities.size(); ++q)
        if (const auto* points = group.quantities[q].points(runs[0])) {
          const bool dashed = group.quantities[q].dashed;
          lines.push_back({group.quantities[q].label, report_color(q), dashed, downsample_curve(*points, o.max_points)});
          legend.push_back(legend_entry(report_color(q), dashed, group.quantities[q].label, *points));
        }
      html += chart_panel(group.title, group.id, lines, legend);
      continue;
    }
    // Several runs: a chart per quantity, a line per run (colours stay with the runs).
    for (const Quantity& quantity : group.quantities) {
      std::vector<ChartLine> lines;
      std::vector<std::string> legend;
      for (size_t r = 0; r < runs.size(); ++r)
        if (const auto* points = quantity.points(runs[r])) {
          lines.push_back({runs[r].name, report_color(r), false, downsample_curve(*points, o.max_points)});
          legend.push_back(legend_entry(report_color(r), false, runs[r].name, *points));
        }
      if (lines.empty()) continue;
      const std::string title = group.quantities.size() == 1 ? group.title : group.title + ": " + quantity.label;
      html += chart_panel(title, group.id + "/" + quantity.label, lines, legend);
    }
  }
  return html + "</div></section>\n";
}

std::string optional_text(std::optional<double> v, const std::string& unit = "") {
  return v ? format_report_number(*v) + unit : "–";
}

std::string total_steps(const RunRecord& run) {
  const std::string steps = config_text(run.config, {"train", "steps"});
  return steps.empty() ? "" : " of " + steps;
}

std::string summary_section(const std::vector<RunRecord>& runs) {
  if (runs.size() == 1) {
    const RunRecord& r = runs[0];
    std::string html = "<section id=\"summary\" class=\"tiles\">";
    html += report_tile("step", std::to_string(r.last_step) + total_steps(r));
    html += report_tile("D loss", optional_text(last_value(scalar(r, "discriminator_loss"))));
    html += report_tile("G loss", optional_text(last_value(scalar(r, "generator_loss"))));
    html += report_tile("images/s", optional_text(recent_median(scalar(r, "images_per_second"))));
    html += report_tile("step time", optional_text(recent_median(scalar(r, "time/total")), " s"));
    for (const auto& [name, points] : r.metrics)
      if (!points.empty()) html += report_tile(name + " @" + std::to_string(points.back().first), format_report_number(points.back().second));
    return html + "</section>\n";
  }
  std::string html = "<section id=\"summary\"><table class=\"kv\"><tr><th>run</th><th>step</th><th>D loss</th>"
                     "<th>G loss</th><th>images/s</th><th>step time (s)</th><th>model_dir</th></tr>";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    html += "<tr><td><span class=\"legend\"><span><span class=\"sw\" style=\"background:" + report_color(i) + "\"></span>" +
            html_escape(r.name) + "</span></span></td><td>" + std::to_string(r.last_step) + html_escape(total_steps(r)) +
            "</td><td>" + optional_text(last_value(scalar(r, "discriminator_loss"))) + "</td><td>" +
            optional_text(last_value(scalar(r, "generator_loss"))) + "</td><td>" +
            optional_text(recent_median(scalar(r, "images_per_second"))) + "</td><td>" +
            optional_text(recent_median(scalar(r, "time/total"))) + "</td><td>" + html_escape(r.model_dir.string()) +
            "</td></tr>";
  }
  return html + "</table></section>\n";
}

std::string samples_section(const RunRecord& run, const ReportPageOptions& o, InlineImages& images) {
  std::string html = "<section id=\"samples\"><h2>Samples from fixed noise</h2><div class=\"strip\">";
  auto figure = [&](const std::filesystem::path& png, const std::string& caption) {
    const std::string& url = images.data_url(png);
    if (url.empty()) return;
    html += "<figure><img src=\"" + url + "\" alt=\"" + html_escape(caption) + "\"><figcaption>" +
            html_escape(caption) + "</figcaption></figure>";
  };
  if (!run.real_grid.empty()) figure(run.real_grid, "real data");
  const auto& grids = run.sample_grids;
  const size_t shown = std::min(grids.size(), std::max<size_t>(o.max_sample_grids, 1));
  for (size_t k = 0; k < shown; ++k) {
    // Evenly spread over the run, first and latest included.
    const size_t i = shown == 1 ? grids.size() - 1 : k * (grids.size() - 1) / (shown - 1);
    figure(grids[i].second, "step " + std::to_string(grids[i].first));
  }
  if (grids.empty() && run.real_grid.empty()) html += "<p>No sample grids yet (hooks.sample_every_steps).</p>";
  html += "</div>";
  if (grids.size() > shown)
    html += "<p class=\"legend\">" + std::to_string(shown) + " of " + std::to_string(grids.size()) +
            " grids shown; all are in " + html_escape((run.model_dir / "samples").string()) + "</p>";
  return html + "</section>\n";
}

std::string placement_from_config(const nlohmann::json& config) {
  const std::string devices = config_text(config, {"strategy", "devices"});
  std::string text = config_text(config, {"strategy", "type"});
  if (!devices.empty()) text += " on " + devices;
  if (devices.find(',') != std::string::npos)
    text += " (" + std::to_string(std::count(devices.begin(), devices.end(), ',') + 1) + " replicas per worker)";
  return text;
}

std::string run_section(const RunRecord& run, const ReportPageOptions& o) {
  const auto row = report_row;
  const nlohmann::json& c = run.config;
  std::string html = "<section id=\"run\"><h2>Run</h2><table class=\"kv\">";
  html += row("model_dir", run.model_dir.string());
  html += row("placement", o.placement.empty() ? placement_from_config(c) : o.placement);
  const std::string global = config_text(c, {"train", "global_batch_size"});
  const std::string per_replica = config_text(c, {"train", "per_replica_batch_size"});
  html += row("batch", (global.empty() ? "" : "global " + global) + (per_replica.empty() ? "" : ", per replica " + per_replica));
  html += row("generator", config_text(c, {"generator", "type"}));
  html += row("discriminator", config_text(c, {"discriminator", "type"}));
  html += row("loss", config_text(c, {"loss", "type"}));
  html += row("mixed precision", config_text(c, {"train", "mixed_precision"}));
  html += row("latest checkpoint",
              run.latest_checkpoint.empty() ? "none yet" : (run.model_dir / "checkpoints" / run.latest_checkpoint).string());
  html += "</table><h3>Resume, train further, sample</h3><pre>";
  const std::string dir = run.model_dir.string(), config = (run.model_dir / "config.json").string();
  html += html_escape("# resume from the latest checkpoint (the same command as the first run also resumes)\n"
                      "gan_train --config " + config + "\n" +
                      "# train further\ngan_train --config " + config + " --steps N\n" +
                      "# sample a grid from the latest checkpoint\ngan_sample --model-dir " + dir + " --out grid.png\n" +
                      "# the same curves in TensorBoard\ntensorboard --logdir " + (run.model_dir / "tb").string());
  return html + "</pre></section>\n";
}

}  // namespace

std::string render_report_page(const std::vector<RunRecord>& runs, const ReportPageOptions& o, InlineImages& images) {
  GANTRY_CHECK(!runs.empty(), "render_report_page: expected at least one run, found none");
  const RunRecord& main = runs[0];
  std::string title = main.name;
  for (size_t i = 1; i < runs.size(); ++i) title += " vs " + runs[i].name;
  std::string subtitle = "step " + std::to_string(main.last_step) + html_escape(total_steps(main)) + " · ";
  subtitle += o.live ? "<span class=\"live\">training</span> (this page reloads every " + std::to_string(o.refresh_seconds) + " s)"
                     : std::string("finished or stopped");
  subtitle += " · updated " + utc_now_text();
  std::string html = report_page_start(title, "report", subtitle, o.live ? o.refresh_seconds : 0);
  html += summary_section(runs);
  html += charts_section(runs, o);
  html += samples_section(main, o, images);
  html += run_section(main, o);
  if (!main.config.is_null())
    html += "<section id=\"config\"><h2>Config</h2><details><summary>" +
            html_escape((main.model_dir / "config.json").string()) + " (resolved)</summary><pre>" +
            html_escape(main.config.dump(2)) + "</pre></details></section>\n";
  html += "</main>\n<div id=\"lightbox\" hidden><img alt=\"enlarged sample grid\"><div class=\"caption\"></div></div>\n" +
          report_page_footer() + "<script>" + kScript + "</script>\n</body></html>\n";
  return html;
}

}  // namespace gantry::hooks
