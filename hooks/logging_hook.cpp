#include "hooks/logging_hook.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::hooks {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string with_components(float loss, const std::map<std::string, float>& components) {
  std::string s = fixed(loss, 4);
  if (components.empty()) return s;
  s += " (";
  bool first = true;
  for (const auto& [name, v] : components) {
    s += (first ? "" : ", ") + name + " " + fixed(v, 4);
    first = false;
  }
  return s + ")";
}

}  // namespace

std::string format_step_line(const gan::StepResults& r, const gan::StepResults& avg) {
  constexpr double ms = 1e3;
  return "step " + std::to_string(r.step) +
         " | D " + with_components(r.discriminator_loss, r.discriminator_components) +
         " | G " + with_components(r.generator_loss, r.generator_components) +
         (r.augment ? " | augment p " + fixed(r.augment_p, 3) : std::string()) +
         " | " + fixed(avg.images_per_second, 1) + " img/s" +
         " | ms/step input " + fixed(avg.time.input_wait * ms, 1) +
         " compute " + fixed(avg.time.compute * ms, 1) +
         " all-reduce " + fixed(avg.time.all_reduce * ms, 1) +
         " update " + fixed(avg.time.update * ms, 1) +
         " total " + fixed(avg.time.total * ms, 1);
}

LoggingHook::LoggingHook(LoggingHookOptions options)
    : options_(std::move(options)), file_outputs_(options_.out) {
  GANTRY_CHECK(options_.every_steps >= 1, "LoggingHook: every_steps: expected >= 1, found ",
               options_.every_steps);
}

void LoggingHook::log(const std::string& line) {
  if (options_.out) {
    if (options_.clear_line_first) *options_.out << "\r\033[K";
    *options_.out << line << '\n';
    options_.out->flush();
  }
  if (file_.is_open()) {
    file_ << line << '\n';
    file_.flush();
    file_outputs_.report(options_.log_file, file_.good(), std::string("write failed: ") + std::strerror(errno));
    file_.clear();
  }
}

void LoggingHook::begin(gan::GanEstimator& estimator) {
  if (!options_.log_file.empty() && !file_.is_open()) {
    if (options_.log_file.has_parent_path())
      std::filesystem::create_directories(options_.log_file.parent_path());
    file_.open(options_.log_file, std::ios::app);
    file_outputs_.report(options_.log_file, file_.good(),
                         std::string("cannot open the log file for appending: ") + std::strerror(errno));
  }
  window_ = {};
  window_steps_ = 0;
  log("training from step " + std::to_string(estimator.global_step()) + " on " +
      std::to_string(estimator.strategy().num_replicas_in_sync()) + " replica(s)");
}

void LoggingHook::after_step(gan::GanEstimator&, const gan::StepResults& r) {
  window_.images_per_second += r.images_per_second;
  window_.time.input_wait += r.time.input_wait;
  window_.time.compute += r.time.compute;
  window_.time.all_reduce += r.time.all_reduce;
  window_.time.update += r.time.update;
  window_.time.total += r.time.total;
  ++window_steps_;
  if (r.step % options_.every_steps != 0) return;
  gan::StepResults avg = window_;
  const double n = static_cast<double>(window_steps_);
  avg.images_per_second /= n;
  avg.time.input_wait /= n;
  avg.time.compute /= n;
  avg.time.all_reduce /= n;
  avg.time.update /= n;
  avg.time.total /= n;
  log(format_step_line(r, avg));
  window_ = {};
  window_steps_ = 0;
}

void LoggingHook::end(gan::GanEstimator& estimator) {
  log("training stopped at step " + std::to_string(estimator.global_step()));
  file_.close();
}

}  // namespace gantry::hooks
