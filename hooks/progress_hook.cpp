#include "hooks/progress_hook.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::hooks {

namespace {

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

}  // namespace

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

ProgressHook::ProgressHook(std::ostream& out, ProgressHookOptions options)
    : out_(out), options_(options) {
  if (!options_.metrics_dir.empty()) metric_files_.emplace(options_.metrics_dir);
  GANTRY_CHECK(options_.every_steps >= 1, "ProgressHook: every_steps: expected >= 1, found ",
               options_.every_steps);
  GANTRY_CHECK(options_.total_steps >= 0, "ProgressHook: total_steps: expected >= 0, found ",
               options_.total_steps);
  bar_ = options_.mode == ProgressMode::Bar ||
         (options_.mode == ProgressMode::Auto && stdout_is_terminal());
}

std::string ProgressHook::render(const gan::StepResults& r) {
  const int64_t step = r.step;
  std::string s;
  char buf[128];
  const int64_t total = options_.total_steps;
  if (bar_ && total > 0) {
    int filled = static_cast<int>(options_.bar_width * std::min<int64_t>(step, total) / total);
    s.push_back('[');
    s.append(static_cast<size_t>(filled), '#');
    s.append(static_cast<size_t>(options_.bar_width - filled), '.');
    s.append("] ");
  }
  if (total > 0) {
    std::snprintf(buf, sizeof buf, "%lld/%lld  %5.1f%%", static_cast<long long>(step),
                  static_cast<long long>(total), 100.0 * static_cast<double>(step) / static_cast<double>(total));
  } else {
    std::snprintf(buf, sizeof buf, "step %lld", static_cast<long long>(step));
  }
  s += buf;
  std::snprintf(buf, sizeof buf, "  D %.4f G %.4f  %.1f img/s", r.discriminator_loss, r.generator_loss,
                r.images_per_second);
  s += buf;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const int64_t done = step - first_step_;
  if (total > 0 && done > 0 && step < total)
    s += "  ETA " + format_duration(elapsed / static_cast<double>(done) * static_cast<double>(total - step));
  if (metric_files_)
    for (MetricValue& v : metric_files_->read_new()) latest_metrics_[v.name] = std::move(v);
  for (const auto& [name, v] : latest_metrics_) {
    std::snprintf(buf, sizeof buf, "  %s %.4g (step %lld)", name.c_str(), v.value, static_cast<long long>(v.step));
    s += buf;
  }
  return s;
}

void ProgressHook::begin(gan::GanEstimator& estimator) {
  first_step_ = estimator.global_step();
  start_ = last_draw_ = Clock::now();
  drawn_ = false;
}

void ProgressHook::after_step(gan::GanEstimator&, const gan::StepResults& r) {
  if (!bar_) {
    if (r.step % options_.every_steps == 0) out_ << render(r) << std::endl;
    return;
  }
  auto now = Clock::now();
  const bool last = options_.total_steps > 0 && r.step >= options_.total_steps;
  if (drawn_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  out_ << "\r\033[K" << render(r) << std::flush;
  last_draw_ = now;
  drawn_ = true;
}

void ProgressHook::end(gan::GanEstimator&) {
  if (bar_ && drawn_) out_ << std::endl;
  drawn_ = false;
}

}  // namespace gantry::hooks
