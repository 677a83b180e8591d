// The HTML pieces the report pages share (hooks/report_page.h for runs, hooks/sweep_page.h for
// sweeps), so both look and read alike: the style sheet, the palette, number formatting, the page
// head with its header, tiles, chart panels with legends, and key-value rows.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hooks/svg_line_chart.h"

namespace gantry::hooks {

// The i-th colour of the palette (cycled): runs, quantities or trials keep theirs across charts.
std::string report_color(size_t i);

// A value as the pages print it: 4 significant digits, exponent notation when very large or small.
std::string format_report_number(double v);

std::string utc_now_text();  // "2026-11-24 16:33:00 UTC"

// "<!DOCTYPE html>...<body><header><h1>title</h1><div class="sub">" followed by `subtitle_html`
// and "</div></header>\n<main>\n": the page's start up to its main part. `refresh_seconds` > 0
// makes the page reload itself that often (while a run or sweep goes on).
std::string report_page_start(const std::string& title, const std::string& kind, const std::string& subtitle_html,
                              int refresh_seconds);

// The footer line every page ends its <body> with (after </main>).
std::string report_page_footer();

// A tile of the summary row: a small caption and a large value.
std::string report_tile(const std::string& key, const std::string& value);

// A legend entry: the line's swatch (dashed where the line is), its label and its last value.
std::string legend_entry(const std::string& color, bool dashed, const std::string& label,
                         const std::vector<CurvePoint>& points);

// One <figure class="panel" data-chart=id> with an SVG chart and its legend.
std::string chart_panel(const std::string& title, const std::string& id, const std::vector<ChartLine>& lines,
                        const std::vector<std::string>& legend, const ChartOptions& options = {});

// A row of a key-value table, or "" when the value is empty.
std::string report_row(const std::string& key, const std::string& value);

}  // namespace gantry::hooks
