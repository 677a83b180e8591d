#include "hooks/report_html.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace gantry::hooks {

namespace {

constexpr const char* kPalette[] = {"#2563eb", "#dc2626", "#059669", "#9333ea", "#ea580c",
                                    "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"};

constexpr const char* kStyle = R"(
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f9fafb;--panel:#fff;--accent:#2563eb}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#111827;color:#f9fafb;padding:18px 28px}header h1{margin:0;font-size:20px;font-weight:600}
header .sub{color:#9ca3af;margin-top:4px}header .live{color:#34d399}
main{padding:20px 28px;max-width:1680px}h2{font-size:16px;margin:26px 0 10px}h3{font-size:14px;margin:16px 0 6px}
.tiles{display:flex;flex-wrap:wrap;gap:12px}.tile{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:150px}
.tile .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}.tile .v{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:14px}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:0}
.panel figcaption{font-weight:600;margin-bottom:4px}.chart{width:100%;height:auto;display:block}
.chart .grid{stroke:#eef0f3;stroke-width:1}.chart .frame{fill:none;stroke:#d1d5db}.chart .tick{fill:var(--muted);font-size:11px}
.chart .line{stroke-width:1.6;stroke-linejoin:round}.chart .empty{fill:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#374151;margin-top:4px}
.legend span.sw{display:inline-block;width:14px;height:3px;vertical-align:middle;margin-right:5px;border-radius:2px}
.legend .val{color:var(--muted);font-variant-numeric:tabular-nums}
.strip{display:flex;gap:12px;overflow-x:auto;padding-bottom:8px}.strip figure{margin:0;flex:0 0 auto;text-align:center}
.strip img{height:180px;image-rendering:pixelated;border:1px solid var(--line);border-radius:4px;cursor:zoom-in;background:#000}
.strip figcaption{font-size:12px;color:var(--muted)}
table.kv{border-collapse:collapse;background:var(--panel);border:1px solid var(--line)}table.kv td,table.kv th{padding:5px 12px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
table.kv th{color:var(--muted);font-weight:500}pre{background:#0f172a;color:#e2e8f0;padding:12px 14px;border-radius:6px;overflow-x:auto;font-size:12.5px}
table.kv td.num{text-align:right;font-variant-numeric:tabular-nums}table.kv tr.best td{background:#ecfdf5}
.state{font-size:12px;padding:1px 7px;border-radius:9px;background:#e5e7eb}.state.complete{background:#d1fae5}.state.pruned{background:#fef3c7}
.state.failed{background:#fee2e2}.state.running{background:#dbeafe}
details{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:8px 12px}summary{cursor:pointer;font-weight:600}
#lightbox{position:fixed;inset:0;background:rgba(0,0,0,.85);display:flex;flex-direction:column;align-items:center;justify-content:center;cursor:zoom-out;z-index:10}
#lightbox[hidden]{display:none}#lightbox img{max-width:94vw;max-height:86vh;min-height:50vh;image-rendering:pixelated}#lightbox .caption{color:#e5e7eb;margin-top:8px}
footer{color:var(--muted);font-size:12px;padding:16px 28px 28px}
)";

// Runs first: it records any later script error on <html>, where a test (or a curious user) sees it.
constexpr const char* kErrorMarker =
    "window.addEventListener('error',function(e){document.documentElement.setAttribute('data-report-error',"
    "String(e.message||e))});";

}  // namespace

std::string report_color(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::string format_report_number(double v) {
  char buf[32];
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3))
    std::snprintf(buf, sizeof(buf), "%.3e", v);
  else
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string utc_now_text() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string report_page_start(const std::string& title, const std::string& kind, const std::string& subtitle_html,
                              int refresh_seconds) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  if (refresh_seconds > 0) html += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_seconds) + "\">";
  html += "<title>" + html_escape(title) + " · Gantry " + html_escape(kind) + "</title><style>" + kStyle +
          "</style><script>" + kErrorMarker + "</script></head>\n<body>\n<header><h1>" + html_escape(title) +
          "</h1><div class=\"sub\">" + subtitle_html + "</div></header>\n<main>\n";
  return html;
}

std::string report_page_footer() {
  return "<footer>Written by Gantry. Self-contained: charts are inline SVG and images inline PNG; the page "
         "loads nothing over the network.</footer>\n";
}

std::string report_tile(const std::string& key, const std::string& value) {
  return "<div class=\"tile\"><div class=\"k\">" + html_escape(key) + "</div><div class=\"v\">" + html_escape(value) +
         "</div></div>";
}

std::string legend_entry(const std::string& color, bool dashed, const std::string& label,
                         const std::vector<CurvePoint>& points) {
  const std::string swatch = dashed ? "repeating-linear-gradient(90deg," + color + " 0 4px,transparent 4px 6px)" : color;
  return "<span><span class=\"sw\" style=\"background:" + swatch + "\"></span>" + html_escape(label) +
         " <span class=\"val\">" + (points.empty() ? std::string("–") : format_report_number(points.back().second)) +
         "</span></span>";
}

std::string chart_panel(const std::string& title, const std::string& id, const std::vector<ChartLine>& lines,
                        const std::vector<std::string>& legend, const ChartOptions& options) {
  std::string html = "<figure class=\"panel\" data-chart=\"" + html_escape(id) + "\"><figcaption>" +
                     html_escape(title) + "</figcaption>" + svg_line_chart(lines, options) + "<div class=\"legend\">";
  for (const std::string& entry : legend) html += entry;
  return html + "</div></figure>\n";
}

std::string report_row(const std::string& key, const std::string& value) {
  return value.empty() ? std::string() : "<tr><th>" + html_escape(key) + "</th><td>" + html_escape(value) + "</td></tr>";
}

}  // namespace gantry::hooks
