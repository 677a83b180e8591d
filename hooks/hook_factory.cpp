#include "hooks/hook_factory.h"

#include <ostream>

#include "core/json_reader.h"
#include "hooks/hook_registry.h"
#include "hooks/metrics_hook.h"
#include "hooks/stop_at_step_hook.h"

namespace gantry::hooks {

namespace {

int64_t non_negative_int(JsonReader& reader, const std::string& key, int64_t fallback) {
  int64_t v = reader.get_int(key, fallback);
  GANTRY_CHECK(v >= 0, reader.key_path(key), ": expected an integer >= 0, found ", v);
  return v;
}

int64_t positive_int(JsonReader& reader, const std::string& key, int64_t fallback) {
  int64_t v = reader.get_int(key, fallback);
  GANTRY_CHECK(v >= 1, reader.key_path(key), ": expected an integer >= 1, found ", v);
  return v;
}

HooksConfig parse_hooks_config_impl(JsonReader& reader) {
  HooksConfig c;
  c.log_every_steps = non_negative_int(reader, "log_every_steps", c.log_every_steps);
  c.progress = reader.get_bool("progress", c.progress);
  c.save_checkpoints_steps = non_negative_int(reader, "save_checkpoints_steps", c.save_checkpoints_steps);
  c.save_checkpoints_secs = reader.get_number("save_checkpoints_secs", c.save_checkpoints_secs);
  GANTRY_CHECK(c.save_checkpoints_secs >= 0, reader.key_path("save_checkpoints_secs"),
               ": expected a number >= 0, found ", c.save_checkpoints_secs);
  c.keep_checkpoint_max = non_negative_int(reader, "keep_checkpoint_max", c.keep_checkpoint_max);
  c.checkpoint_at_end = reader.get_bool("checkpoint_at_end", c.checkpoint_at_end);
  c.sample_every_steps = non_negative_int(reader, "sample_every_steps", c.sample_every_steps);
  {
    JsonReader grid(reader.object("sample_grid"), reader.key_path("sample_grid"));
    c.sample_rows = positive_int(grid, "rows", c.sample_rows);
    c.sample_cols = positive_int(grid, "cols", c.sample_cols);
    c.sample_truncation_psi = static_cast<float>(grid.get_number("truncation_psi", c.sample_truncation_psi));
    c.sample_truncation_cutoff = non_negative_int(grid, "truncation_cutoff", c.sample_truncation_cutoff);
    grid.finish();
  }
  c.save_summary_steps = non_negative_int(reader, "save_summary_steps", c.save_summary_steps);
  c.nan_policy = reader.get_choice("nan_policy", "stop", {"stop", "skip"}) == "stop" ? NanPolicy::Stop
                                                                                    : NanPolicy::Skip;
  c.nan_max_consecutive_skips = non_negative_int(reader, "nan_max_consecutive_skips", c.nan_max_consecutive_skips);
  c.stop_at_step = non_negative_int(reader, "stop_at_step", c.stop_at_step);
  c.tensorboard = parse_tensorboard_config(reader.object("tensorboard"), reader.key_path("tensorboard"));
  c.report = parse_report_config(reader.object("report"), reader.key_path("report"));
  c.custom = reader.array("custom");
  for (size_t i = 0; i < c.custom.size(); ++i) {
    const std::string path = reader.key_path("custom") + "[" + std::to_string(i) + "]";
    const nlohmann::json& entry = c.custom[i];
    GANTRY_CHECK(entry.is_object() && entry.contains("type") && entry["type"].is_string(), path,
                 ": expected {\"type\": NAME, ...}, found ", describe_json(entry));
    GANTRY_CHECK(has_hook(entry["type"].get<std::string>()), path, ".type: unknown hook \"",
                 entry["type"].get<std::string>(), "\" (is its plugin listed in \"plugins\"?)");
  }
  nlohmann::json& metrics = reader.array("metrics");
  for (size_t i = 0; i < metrics.size(); ++i)
    c.metrics.push_back(parse_sample_quality_options(metrics[i], reader.key_path("metrics") + "[" + std::to_string(i) + "]"));
  reader.finish();
  return c;
}

}  // namespace

HooksConfig parse_hooks_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path);
  return parse_hooks_config_impl(reader);
}

HookSet make_hooks(const HooksConfig& c, const HookContext& ctx) {
  GANTRY_CHECK(!ctx.model_dir.empty(), "make_hooks: expected a model directory, found an empty path");
  HookSet set;
  set.health = std::make_shared<RunHealth>();
  set.hooks.push_back(std::make_shared<NanGuardHook>(c.nan_policy, set.health, ctx.out, c.nan_max_consecutive_skips));
  if (ctx.stop_signal || ctx.max_wall_seconds > 0) {
    set.graceful_stop = std::make_shared<GracefulStopHook>(ctx.stop_signal ? ctx.stop_signal : [] { return 0; },
                                                           ctx.max_wall_seconds);
    set.hooks.push_back(set.graceful_stop);
  }
  if (c.stop_at_step > 0) set.hooks.push_back(std::make_shared<StopAtStepHook>(c.stop_at_step));
  if (c.save_summary_steps > 0)
    set.hooks.push_back(std::make_shared<MetricsHook>(ctx.model_dir, c.save_summary_steps, ctx.out));

  std::shared_ptr<ProgressHook> progress;
  if (c.progress && ctx.out) {
    ProgressHookOptions p;
    p.total_steps = ctx.max_steps;
    p.every_steps = c.log_every_steps > 0 ? c.log_every_steps : 50;
    p.mode = ctx.progress_mode;
    p.metrics_dir = ctx.model_dir;
    progress = std::make_shared<ProgressHook>(*ctx.out, p);
  }
  if (c.log_every_steps > 0) {
    LoggingHookOptions l;
    l.every_steps = c.log_every_steps;
    l.out = ctx.out;
    l.log_file = ctx.log_file.empty() ? ctx.model_dir / "train.log" : ctx.log_file;
    l.clear_line_first = progress && progress->bar();
    set.hooks.push_back(std::make_shared<LoggingHook>(l));
  }
  if (progress) set.hooks.push_back(progress);
  if (c.sample_every_steps > 0) {
    SampleHookOptions s;
    s.every_steps = c.sample_every_steps;
    s.rows = c.sample_rows;
    s.cols = c.sample_cols;
    s.truncation_psi = c.sample_truncation_psi;
    s.truncation_cutoff = c.sample_truncation_cutoff;
    s.seed = ctx.seed;
    s.log = ctx.out;
    set.samples = std::make_shared<SampleHook>(ctx.model_dir, s, ctx.real_images);
    set.hooks.push_back(set.samples);
  }
  if (c.tensorboard.enabled) {
    TensorBoardHookOptions t;
    t.dir = tensorboard_dir(c.tensorboard, ctx.model_dir);
    t.scalar_every_steps = c.save_summary_steps;
    t.image_every_steps = c.sample_every_steps;
    if (set.samples) t.samples_dir = set.samples->samples_dir();
    t.histogram_every_steps = c.tensorboard.histogram_every_steps;
    t.metrics_dir = ctx.model_dir;
    set.tensorboard = std::make_shared<TensorBoardHook>(t);
    set.hooks.push_back(set.tensorboard);
  }
  CheckpointHookOptions k;
  k.every_steps = c.save_checkpoints_steps;
  k.every_seconds = c.save_checkpoints_secs;
  k.keep_max = c.keep_checkpoint_max;
  k.at_end = c.checkpoint_at_end;
  k.max_steps = ctx.max_steps;
  k.input_position = ctx.input_position;
  k.config = ctx.config;
  k.generator_ema = ctx.generator_ema;
  k.health = set.health;
  k.log = ctx.out;
  set.checkpoint = std::make_shared<CheckpointHook>(ctx.model_dir, k);
  if (!c.metrics.empty()) {
    GANTRY_CHECK(ctx.real_data.pipeline.dataset() != nullptr, "hooks.metrics: the run gives no real data to compare with");
    for (auto& hook : make_sample_quality_hooks(c.metrics, ctx.model_dir, ctx.real_data, ctx.out)) set.hooks.push_back(hook);
  }
  // custom hooks run before the checkpoint hook, so what they change is in the checkpoint
  nlohmann::json custom = c.custom;
  for (size_t i = 0; i < custom.size(); ++i)
    set.hooks.push_back(make_custom_hook(custom[i], "hooks.custom[" + std::to_string(i) + "]", ctx));
  set.hooks.push_back(set.checkpoint);
  if (c.report.enabled) {
    ReportHookOptions r;
    r.model_dir = ctx.model_dir;
    r.every_steps = c.save_summary_steps;
    r.page.max_points = static_cast<size_t>(c.report.max_points);
    r.page.max_sample_grids = static_cast<size_t>(c.report.max_sample_grids);
    r.page.refresh_seconds = static_cast<int>(c.report.refresh_seconds);
    set.report = std::make_shared<ReportHook>(r);
    set.hooks.push_back(set.report);
  }
  return set;
}

}  // namespace gantry::hooks
