#include "hooks/hook_factory.h"

#include <ostream>

#include "core/json_reader.h"
#include "hooks/hook_registry.h"
#include "hooks/metrics_hook.h"
#include "hooks/stop_at_step_hook.h"

namespace gantry::hooks {

namespace {

// An interval or count, 0 to turn it off (the wording of its error predates the declarations).
constexpr ConfigKey count_key(std::string_view name, std::string_view fallback, std::string_view doc) {
  return int_key(name, fallback, doc).at_least(0).expecting("an integer >= 0");
}

void set_nan_policy(HooksConfig& c, const nlohmann::json& v) {
  c.nan_policy = v.get<std::string>() == "stop" ? NanPolicy::Stop : NanPolicy::Skip;
}

constexpr ConfigKey kHooksKeys[] = {
    count_key("log_every_steps", "50", "LoggingHook interval (terminal and `model_dir/train.log`); 0 disables it; "
              "also the progress line interval when stdout is not a terminal")
        .into<&HooksConfig::log_every_steps>(),
    bool_key("progress", "true", "ProgressHook: a bar on a terminal, plain lines otherwise")
        .into<&HooksConfig::progress>(),
    count_key("save_checkpoints_steps", "500", "CheckpointHook step interval; 0 = no step trigger")
        .into<&HooksConfig::save_checkpoints_steps>(),
    number_key("save_checkpoints_secs", "0", "CheckpointHook time interval in seconds; 0 = none (with both 0 only "
               "the final checkpoint is written)")
        .at_least(0)
        .into<&HooksConfig::save_checkpoints_secs>(),
    count_key("keep_checkpoint_max", "5", "checkpoints kept (oldest deleted first); 0 = keep all")
        .into<&HooksConfig::keep_checkpoint_max>(),
    bool_key("checkpoint_at_end", "true", "also save when training stops").into<&HooksConfig::checkpoint_at_end>(),
    count_key("sample_every_steps", "200", "SampleHook interval (`samples/step-<step>.png`); 0 disables it")
        .into<&HooksConfig::sample_every_steps>(),
    object_key("sample_grid", "{}", "the sample grid (hooks.sample_grid)"),
    count_key("save_summary_steps", "50", "MetricsHook interval (`metrics.jsonl`); 0 disables it")
        .into<&HooksConfig::save_summary_steps>(),
    string_key("nan_policy", R"("stop")", "`stop` (stop, keep the last good checkpoint) or `skip` (tolerate and "
               "count); hooks/nan_guard_hook.h")
        .one_of("stop, skip")
        .into<&set_nan_policy>(),
    count_key("nan_max_consecutive_skips", "100", "with `skip`: this many non-finite steps in a row stop the run as "
              "`stop` does; 0 = no limit")
        .into<&HooksConfig::nan_max_consecutive_skips>(),
    count_key("stop_at_step", "0", "StopAtStepHook's last step; 0 = none (train.steps stops the run anyway)")
        .into<&HooksConfig::stop_at_step>(),
    object_key("tensorboard", "{}", "TensorBoard event files (hooks.tensorboard)"),
    object_key("report", "{}", "the report page `model_dir/report.html` (hooks.report)"),
    array_key("custom", "[]", R"(hooks registered by name (hooks/hook_registry.h), [{"type": NAME, ...}])"),
    array_key("metrics", "[]", "sample-quality metrics during training (hooks.metrics[])"),
};

constexpr ConfigKey kSampleGridKeys[] = {
    int_key("rows", "8", "rows of samples per grid").at_least(1).expecting("an integer >= 1").into<&SampleGrid::rows>(),
    int_key("cols", "8", "columns of samples per grid")
        .at_least(1)
        .expecting("an integer >= 1")
        .into<&SampleGrid::cols>(),
    number_key("truncation_psi", "1", "a stylegan2 generator's truncation, w = w_avg + psi (w - w_avg); 1 = off")
        .into<&SampleGrid::truncation_psi>(),
    count_key("truncation_cutoff", "0", "truncate the first N layers' w only; 0 = every layer")
        .into<&SampleGrid::truncation_cutoff>(),
};

HooksConfig parse_hooks_config_impl(JsonReader& reader) {
  HooksConfig c;
  reader.read_into(c);
  {
    JsonReader grid(reader.read("sample_grid"), reader.key_path("sample_grid"), kSampleGridKeys);
    grid.read_into(c.sample_grid);
    grid.finish();
  }
  c.tensorboard = parse_tensorboard_config(reader.read("tensorboard"), reader.key_path("tensorboard"));
  c.report = parse_report_config(reader.read("report"), reader.key_path("report"));
  c.custom = reader.read("custom");
  for (size_t i = 0; i < c.custom.size(); ++i) {
    const std::string path = reader.key_path("custom") + "[" + std::to_string(i) + "]";
    const nlohmann::json& entry = c.custom[i];
    GANTRY_CHECK(entry.is_object() && entry.contains("type") && entry["type"].is_string(), path,
                 ": expected {\"type\": NAME, ...}, found ", describe_json(entry));
    GANTRY_CHECK(has_hook(entry["type"].get<std::string>()), path, ".type: unknown hook \"",
                 entry["type"].get<std::string>(), "\" (is its plugin listed in \"plugins\"?)");
  }
  nlohmann::json& metrics = reader.read("metrics");
  for (size_t i = 0; i < metrics.size(); ++i)
    c.metrics.push_back(parse_sample_quality_options(metrics[i], reader.key_path("metrics") + "[" + std::to_string(i) + "]"));
  reader.finish();
  return c;
}

}  // namespace

std::vector<ConfigSection> hooks_config_sections() {
  return {{"hooks", kHooksKeys},
          {"hooks.sample_grid", kSampleGridKeys},
          {"hooks.tensorboard", tensorboard_config_keys()},
          {"hooks.report", report_config_keys()},
          {"hooks.metrics[]", sample_quality_keys()}};
}

HooksConfig parse_hooks_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path, kHooksKeys);
  return parse_hooks_config_impl(reader);
}

HookSet make_hooks(const HooksConfig& c, const HookContext& ctx) {
  GANTRY_CHECK(!ctx.model_dir.empty(), "make_hooks: expected a model directory, found an empty path");
  HookSet set;
  set.health = std::make_shared<RunHealth>();
  set.hooks.push_back(std::make_shared<NanGuardHook>(c.nan_policy, set.health, ctx.out, c.nan_max_consecutive_skips));
  if (ctx.stop_signal || ctx.train.max_wall_seconds > 0) {
    set.graceful_stop = std::make_shared<GracefulStopHook>(ctx.stop_signal ? ctx.stop_signal : [] { return 0; },
                                                           ctx.train.max_wall_seconds);
    set.hooks.push_back(set.graceful_stop);
  }
  if (c.stop_at_step > 0) set.hooks.push_back(std::make_shared<StopAtStepHook>(c.stop_at_step));
  if (c.save_summary_steps > 0)
    set.hooks.push_back(std::make_shared<MetricsHook>(ctx.model_dir, c.save_summary_steps, ctx.out));

  std::shared_ptr<ProgressHook> progress;
  if (c.progress && ctx.out) {
    ProgressHookOptions p;
    p.total_steps = ctx.train.steps;
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
    s.rows = c.sample_grid.rows;
    s.cols = c.sample_grid.cols;
    s.truncation_psi = c.sample_grid.truncation_psi;
    s.truncation_cutoff = c.sample_grid.truncation_cutoff;
    s.seed = ctx.train.seed;
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
  k.max_steps = ctx.train.steps;
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
