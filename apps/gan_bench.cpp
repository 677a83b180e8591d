// gan_bench: throughput of one full GAN training step of the reference DCGAN-32 (or, with --model
// resnet, of the SNGAN-style ResNet-32 of bench/resnet_torch.py; with --model stylegan2, of the
// StyleGAN2-32 of bench/stylegan2_torch.py, see Note [stylegan2 bench]; with --model r3gan, of the
// R3GAN-32 of bench/r3gan_torch.py; with --model transformer, of the GAT-style transformer of
// bench/transformer_torch.py)
// (shared/reference/README.md) through the real estimator code path. Each model is a run config,
// bench/configs/<model>.json (bench/reference_models.h): the DCGAN's is the "dcgan" generator and
// discriminator, the non-saturating loss, Adam(2e-4, 0.5, 0.999) for both networks and the
// schedule g=1, d=1 with reuse_fake (the G update reuses the D update's fake batch, as the
// reference loop does). The bench's options become overrides of that config (as gan_train --set;
// --set adds more), which gan_train's resolution turns into the run, and jobs/ builds the strategy
// and the estimator from it as it does for gan_train. The input is one fixed random batch in [-1,
// 1], like the reference's `real`, fed through a BatchSource (the data pipeline has no source
// that repeats one batch, so the bench keeps its own). Prints one JSON line with the
// reference benchmark's fields (impl, threads, ngf, ndf, batch, steps, seconds, images_per_second,
// ms_per_step) plus replicas, peak RSS, the per-phase time breakdown averaged over the timed steps,
// heap allocations and minor page faults per step, and the step's convolution GFLOP/s against the
// raw oneDNN primitives' (Note [conv roofline]). On CUDA devices (--devices cuda:0) the clock
// reads after a device synchronize, the output adds the allocator's peak device memory, and there
// is no roofline. Exit codes: 0 success, 2 usage error, 1 runtime failure.
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "apps/app_support.h"
#include "backend/conv_math.h"
#include "backend/conv_roofline.h"
#include "bench/allocation_counter.h"
#include "bench/fma_peak.h"
#include "bench/reference_models.h"
#include "core/ops/ops.h"
#include "gan/config/device_list.h"
#include "gan/config/run_config.h"
#include "gan/estimator/gan_estimator.h"
#include "jobs/run_estimator.h"
#include "jobs/training_run.h"

namespace gantry {
namespace {

// Keep in step with project(gantry VERSION ...) in the top-level CMakeLists.txt.
constexpr const char* kVersion = "0.1.0";

struct Args {
  std::string model = "dcgan";
  int64_t nz = 100;
  int64_t ngf = 64;
  int64_t ndf = 64;
  int64_t batch = 64;
  int threads = 2;
  std::string devices = "cpu:0";
  int64_t resolution = 32;  // --model dcgan: 32 or 64 (DCGAN-64, each network one stage more)
  int64_t steps = 30;
  int64_t warmup = 5;
  uint64_t seed = 0;
  bool roofline = true;
  bool fma_peak = true;
  std::string mixed_precision = "none";
  std::string augment;      // "" or a comma-separated augment.policy (docs/augmentation.md)
  double augment_p = 1.0;
  int micro_batches = 1;  // gradient accumulation (train.micro_batches)
  std::vector<std::string> overrides;  // --set key.path=value, after the options above
};

// Sums StepResults::time over the steps it sees (the timed ones).
class BreakdownHook : public gan::Hook {
 public:
  void after_step(gan::GanEstimator&, const gan::StepResults& r) override {
    sum_.input_wait += r.time.input_wait;
    sum_.compute += r.time.compute;
    sum_.all_reduce += r.time.all_reduce;
    sum_.update += r.time.update;
    sum_.total += r.time.total;
    best_total_ = steps_ == 0 ? r.time.total : std::min(best_total_, r.time.total);
    ++steps_;
    last_losses_ = {r.discriminator_loss, r.generator_loss};  // not `r` itself: its maps allocate
    skipped_updates_ += r.skipped_updates;
    // r.step counts the steps done, so the step just run had index r.step - 1 (the index the
    // lazy penalties test: LossContext::step).
    if (lazy_interval_ > 0) {
      const bool lazy = (r.step - 1) % lazy_interval_ == 0;
      (lazy ? lazy_total_ : plain_total_) += r.time.total;
      ++(lazy ? lazy_steps_ : plain_steps_);
    }
  }
  // Split the step times by whether a lazy regulariser of this interval ran (0: do not split).
  void split_lazy_steps(int64_t interval) { lazy_interval_ = interval; }
  int64_t lazy_steps() const { return lazy_steps_; }
  int64_t plain_steps() const { return plain_steps_; }
  double lazy_mean() const { return lazy_steps_ ? lazy_total_ / static_cast<double>(lazy_steps_) : 0.0; }
  double plain_mean() const { return plain_steps_ ? plain_total_ / static_cast<double>(plain_steps_) : 0.0; }
  const gan::TimeBreakdown& sum() const { return sum_; }
  int64_t steps() const { return steps_; }
  double best_total() const { return best_total_; }  // the fastest step's wall time, s
  // The last step's (discriminator, generator) losses.
  std::pair<float, float> last_losses() const { return last_losses_; }
  // Updates not applied (fp16's dynamic loss scale overflowing): a step without one is cheaper.
  int64_t skipped_updates() const { return skipped_updates_; }

 private:
  gan::TimeBreakdown sum_;
  std::pair<float, float> last_losses_;
  double best_total_ = 0;
  int64_t steps_ = 0, skipped_updates_ = 0;
  int64_t lazy_interval_ = 0, lazy_steps_ = 0, plain_steps_ = 0;
  double lazy_total_ = 0, plain_total_ = 0;
};

// The device list as gan_train reads it (gan::parse_devices): CPU replicas, or CUDA devices
// (one replica per device, NCCL between them), not a mix.
std::vector<Device> parse_bench_devices(const std::string& text) {
  std::vector<Device> devices = gan::parse_devices(text, "--devices");
  for (const Device& d : devices)
    GANTRY_CHECK(d.kind == devices.front().kind, "--devices: expected devices of one kind, found ",
                 devices.front().str(), " and ", d.str());
  for (const Device& d : devices) backend_for(d);  // a clear error for a device that is not there
  return devices;
}

// The model's config keys of --ngf / --ndf: the width of every DCGAN / ResNet stage, StyleGAN2's
// channel_max (Note [stylegan2 bench]), each of R3GAN's 4 stages, the transformer's token width.
std::vector<std::string> width_overrides(const Args& a) {
  auto each_stage = [](int64_t width) { return nlohmann::json(std::vector<int64_t>(4, width)).dump(); };
  if (a.model == "resnet") return {"generator.ch=" + std::to_string(a.ngf), "discriminator.ch=" + std::to_string(a.ndf)};
  if (a.model == "stylegan2")
    return {"generator.channel_max=" + std::to_string(a.ngf), "discriminator.channel_max=" + std::to_string(a.ndf)};
  if (a.model == "r3gan") return {"generator.widths=" + each_stage(a.ngf), "discriminator.widths=" + each_stage(a.ndf)};
  if (a.model == "transformer")
    return {"generator.width=" + std::to_string(a.ngf), "discriminator.width=" + std::to_string(a.ndf)};
  return {"generator.ngf=" + std::to_string(a.ngf), "discriminator.ndf=" + std::to_string(a.ndf)};
}

// --model's config with the bench's options as gan_train's overrides and --devices, then --set.
jobs::TrainingRequest bench_request(const Args& a) {
  const auto models = bench::reference_models();
  const auto model = std::find_if(models.begin(), models.end(), [&a](const auto& m) { return m.name == a.model; });
  GANTRY_CHECK(model != models.end(), "--model ", a.model, ": not a reference model");  // CLI checked it
  nlohmann::json policy = nlohmann::json::array();  // --augment's comma-separated list
  for (size_t start = 0; !a.augment.empty() && start <= a.augment.size();) {
    const size_t comma = std::min(a.augment.find(',', start), a.augment.size());
    policy.push_back(a.augment.substr(start, comma - start));
    start = comma + 1;
  }
  const std::string r = std::to_string(a.resolution);
  jobs::TrainingRequest request;
  request.config = nlohmann::json::parse(model->config);
  request.source = model->path;
  request.overrides = width_overrides(a);
  request.overrides.insert(request.overrides.end(),
                           {"generator.noise_dim=" + std::to_string(a.nz), "data.image_shape=[1," + r + "," + r + "]",
                            "train.global_batch_size=" + std::to_string(a.batch),
                            "train.threads=" + std::to_string(a.threads), "train.seed=" + std::to_string(a.seed),
                            "train.mixed_precision=" + a.mixed_precision,
                            "train.micro_batches=" + std::to_string(a.micro_batches),
                            "augment.policy=" + policy.dump(), "augment.p=" + nlohmann::json(a.augment_p).dump()});
  request.overrides.insert(request.overrides.end(), a.overrides.begin(), a.overrides.end());
  request.devices = a.devices;
  return request;
}

// Note [stylegan2 bench]: --model stylegan2 is the StyleGAN2 GAN at 32x32 that
// configs/stylegan2_fashion_mnist.json trained before its widths were tuned for quality per CPU
// second (docs/models.md; kept so that the figures stay comparable), bench/configs/stylegan2.json:
// the "stylegan2" G (z_dim --nz, w_dim 64, 2 mapping layers, lr multiplier 0.01, channel_base
// 1024, style mixing 0.9) and D (channel_base 1024, mbstd group 4), --ngf / --ndf being G's / D's
// channel_max (the width of every resolution at 32x32 with channel_base 1024: min(1024 / res,
// max) = max for res <= 16, 32 at res 32 when max = 64), the non-saturating loss, Adam(0.0025,
// 0.0, 0.99) for both (no lazy-regularisation correction, no path length) and R1 (gamma 0.1)
// every 16th D step. The R1 steps cost about twice a plain step, so a window of N steps that
// happens to hold 0, 1 or 2 of them would measure the window, not the training. The bench
// therefore times both kinds of step apart whenever the run has a lazy regulariser (the timed
// window must hold at least one of each) and reports, as ms_per_step and images_per_second, the
// config's amortised step
//     ((interval - 1) * plain + r1) / interval,
// with plain_step_ms and r1_step_ms next to it; bench/stylegan2_torch.py does the same.

// The largest interval of the run's objective terms (Note [lazy terms] in gan/spec/objective_term.h):
// 1 without a lazy regulariser.
int64_t lazy_interval(const gan::RunSetup& run) {
  int64_t interval = 1;
  for (const gan::TermPtr& term : run.spec.terms) interval = std::max(interval, term->interval());
  return interval;
}

// One fixed batch (N, C, H, W) uniform in [-1, 1], as the reference's `real`.
data::Batch fixed_batch(int64_t n, const std::vector<int64_t>& image_shape, uint64_t seed) {
  std::mt19937 gen(static_cast<std::mt19937::result_type>(seed));
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(n * image_shape.at(0) * image_shape.at(1) * image_shape.at(2)));
  for (float& v : values) v = uniform(gen);
  data::Batch b;
  b.images = ops::from_vector(values, Shape{n, image_shape[0], image_shape[1], image_shape[2]});
  for (int64_t i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.epochs.push_back(0);
  }
  return b;
}

double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

// The usage errors of `a` on devices of this kind (exit code 2), or "" when there is none.
std::string usage_error(const Args& a, bool on_cuda) {
  std::ostringstream why;
  if (a.resolution != 32 && a.model != "dcgan") {
    why << "--resolution " << a.resolution << ": only --model dcgan has a 64x64 variant";
  } else if (a.mixed_precision == "fp16" && !on_cuda) {
    why << "--mixed-precision fp16: CUDA devices only (the CPU runs bf16)";
  }
  return why.str();
}

// With a lazy regulariser of `interval`, the timed steps must hold one of its steps and a plain
// one (Note [stylegan2 bench]); the usage error (exit code 2) when they do not, else "".
std::string lazy_window_error(const Args& a, int64_t interval) {
  if (interval == 1) return "";
  const int64_t first_lazy = (a.warmup + interval - 1) / interval * interval;
  if (first_lazy <= a.warmup + a.steps - 1 && a.steps >= 2) return "";
  std::ostringstream why;
  why << "--model " << a.model << ": the timed steps " << a.warmup << ".." << a.warmup + a.steps - 1
      << " must hold an R1 step (every " << interval << "th from 0) and a plain one; use --steps >= " << interval;
  return why.str();
}

// What the timed steps measured.
struct Measurement {
  double seconds = 0;  // wall time of the timed steps
  uint64_t allocations = 0, operator_news = 0;
  rusage before{}, after{};
  std::vector<RecordedConv> convs;  // Note [conv roofline]; empty without the roofline
};

// --warmup untimed steps, then --steps timed ones (with the convolutions recorded when
// `roofline`), all on the same batch; the clock reads after every device has finished.
Measurement time_steps(gan::GanEstimator& estimator, const Args& a, const gan::RunSetup& run,
                       const std::vector<Device>& devices, bool roofline,
                       const std::shared_ptr<BreakdownHook>& breakdown) {
  data::Batch real = fixed_batch(run.train.global_batch_size, run.image_shape, run.train.seed);
  // One GPU keeps the batch on the device, as the reference keeps `real` there (its shard is then
  // a slice on the device); several GPUs upload their shards every step.
  if (devices.front().is_cuda() && devices.size() == 1) real.images = real.images.to(devices.front());
  auto synchronize = [&devices] {
    for (const Device& d : devices) backend_for(d).synchronize(d);
  };
  // Every step trains on the same batch: its tensors (handles to the same storage), without the
  // provenance lists, which training never reads (a copy of them each step would be the bench's
  // own allocations, not the trainer's).
  gan::BatchSource source = [&real] {
    data::Batch b;
    b.images = real.images;
    b.labels = real.labels;
    return b;
  };

  estimator.train(source, a.warmup);
  synchronize();

  std::optional<ConvRecorder> recorder;
  if (roofline) recorder.emplace(DeviceKind::CPU);  // Note [conv roofline]
  const std::vector<std::shared_ptr<gan::Hook>> hooks{breakdown};  // made before counting
  Measurement m;
  getrusage(RUSAGE_SELF, &m.before);
  const uint64_t allocations_before = bench::heap_allocations();
  const uint64_t new_before = bench::operator_new_calls();
  const bool trace = bench::alloc_trace_requested();
  if (trace) bench::start_alloc_trace();  // Note [allocation trace]
  const auto t0 = std::chrono::steady_clock::now();
  estimator.train(source, a.warmup + a.steps, hooks);
  synchronize();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.allocations = bench::heap_allocations() - allocations_before;
  m.operator_news = bench::operator_new_calls() - new_before;
  if (trace) bench::report_alloc_trace(static_cast<double>(a.steps));
  if (recorder) m.convs = recorder->recorded();
  recorder.reset();
  getrusage(RUSAGE_SELF, &m.after);
  return m;
}

// The timed steps' convolutions as raw primitives (Note [conv roofline]). Replicas run their
// convolutions concurrently, so the step's roofline time is one replica's share.
void report_roofline(nlohmann::ordered_json& out, const Measurement& m, const BreakdownHook& breakdown,
                     double steps, double replicas) {
  double flops = 0, roofline_seconds = 0;
  for (const RecordedConv& c : m.convs) {
    flops += c.call.flops() * static_cast<double>(c.count);
    roofline_seconds += raw_conv_seconds(DeviceKind::CPU, c.call) * static_cast<double>(c.count);
  }
  const double conv_gflop_per_step = flops / steps * 1e-9;
  const double roofline_step_seconds = roofline_seconds / steps / replicas;
  const double step_seconds = m.seconds / steps;
  out["conv_gflop_per_step"] = round_to(conv_gflop_per_step, 3);
  out["achieved_gflops"] = round_to(conv_gflop_per_step / step_seconds, 1);
  out["roofline_gflops"] = round_to(conv_gflop_per_step / roofline_step_seconds, 1);
  out["roofline_ms_per_step"] = round_to(roofline_step_seconds * 1000.0, 2);
  // The roofline is a best-of-rounds figure (an uncontended estimate), so next to the ratio
  // against the mean step it is also given against the fastest step, its like for like.
  out["roofline_ratio"] = round_to(roofline_step_seconds / step_seconds, 3);
  out["roofline_ratio_best_step"] = round_to(roofline_step_seconds / breakdown.best_total(), 3);
}

// The arithmetic limit of the thread budget, measured after the steps (Note [FMA peak] in
// bench/fma_peak.cpp). The step's convolutions are compared with the peak of the type they
// multiply in.
void report_fma_peak(nlohmann::ordered_json& out, const gan::RunSetup& run) {
  const bench::FmaPeak peak = bench::measure_fma_peak(run.train.threads);
  out["fma_peak_gflops"] = {{"isa", peak.isa}, {"threads", peak.threads}, {"f32", round_to(peak.f32, 1)},
                            {"bf16", round_to(peak.bf16, 1)}};
  const double limit = run.conv_math == ConvMath::BF16 ? peak.bf16 : peak.f32;
  if (out.contains("achieved_gflops") && limit > 0)
    out["conv_fraction_of_fma_peak"] = round_to(out["achieved_gflops"].get<double>() / limit, 3);
}

// The JSON line: the reference benchmark's fields, then the bench's own. The run's values (batch,
// threads, ...) are the options' unless --set changed them.
nlohmann::ordered_json report(const Args& a, const gan::RunSetup& run, const std::vector<Device>& devices,
                              const distribute::Strategy& strategy, const Measurement& m,
                              const BreakdownHook& breakdown, bool roofline, bool fma_peak) {
  const int64_t interval = lazy_interval(run);
  const bool lazy_r1 = interval > 1;
  const double steps = static_cast<double>(a.steps);
  const double ms = 1000.0 / steps;
  // The config's amortised step in place of the window's mean (Note [stylegan2 bench]).
  double step_seconds_reported = m.seconds / steps;
  if (lazy_r1) {
    // run() refused a window without both kinds of step (lazy_window_error)
    GANTRY_CHECK(breakdown.lazy_steps() > 0 && breakdown.plain_steps() > 0, "--model ", a.model,
                 ": the timed steps hold no lazy regulariser's step or no plain one");
    const double k = static_cast<double>(interval);
    step_seconds_reported = ((k - 1) * breakdown.plain_mean() + breakdown.lazy_mean()) / k;
  }
  const int64_t batch = run.train.global_batch_size;
  const gan::TimeBreakdown& t = breakdown.sum();
  nlohmann::ordered_json out;
  out["impl"] = std::string("gantry-") + kVersion;
  out["model"] = a.model;
  out["devices"] = a.devices;
  out["resolution"] = run.image_shape.at(2);
  out["threads"] = run.train.threads;
  out["mixed_precision"] = run.resolved["train"]["mixed_precision"];
  out["ngf"] = a.ngf;
  out["ndf"] = a.ndf;
  out["batch"] = batch;
  out["augment"] = a.augment;
  out["augment_p"] = a.augment_p;
  out["steps"] = a.steps;
  out["seconds"] = round_to(m.seconds, 4);
  out["images_per_second"] = round_to(static_cast<double>(batch) / step_seconds_reported, 1);
  out["ms_per_step"] = round_to(step_seconds_reported * 1000.0, 2);
  if (lazy_r1) {
    out["r1_interval"] = interval;
    out["plain_step_ms"] = round_to(breakdown.plain_mean() * 1000.0, 2);
    out["r1_step_ms"] = round_to(breakdown.lazy_mean() * 1000.0, 2);
    out["r1_steps_timed"] = breakdown.lazy_steps();
    out["window_ms_per_step"] = round_to(m.seconds * ms, 2);
  }
  out["replicas"] = strategy.num_replicas_in_sync();
  out["micro_batches"] = run.train.micro_batches;
  out["peak_rss_mb"] = round_to(static_cast<double>(m.after.ru_maxrss) / 1024.0, 1);  // ru_maxrss: KiB
  if (devices.front().is_cuda()) {  // the caching allocator's peak over the run, as torch.cuda.max_memory_allocated
    size_t peak = 0;
    for (const Device& d : devices) peak = std::max(peak, backend_for(d).peak_allocated_bytes(d));
    out["peak_device_memory_mb"] = round_to(static_cast<double>(peak) / (1024.0 * 1024.0), 1);
  }
  out["breakdown_ms"] = {{"input_wait", round_to(t.input_wait * ms, 3)},
                         {"compute", round_to(t.compute * ms, 3)},
                         {"all_reduce", round_to(t.all_reduce * ms, 3)},
                         {"update", round_to(t.update * ms, 3)},
                         {"total", round_to(t.total * ms, 3)}};
  // Every malloc-family call; operator new is a part of them (Note [counting allocations] in
  // bench/allocation_counter.cpp).
  out["heap_allocations_per_step"] = round_to(static_cast<double>(m.allocations) / steps, 1);
  out["operator_new_per_step"] = round_to(static_cast<double>(m.operator_news) / steps, 1);
  if (roofline) report_roofline(out, m, breakdown, steps, static_cast<double>(strategy.num_replicas_in_sync()));
  if (fma_peak) report_fma_peak(out, run);
  out["minor_faults_per_step"] = round_to(static_cast<double>(m.after.ru_minflt - m.before.ru_minflt) / steps, 1);
  // The last step's losses, to show the networks really trained (finite, not stuck).
  out["last_losses"] = {{"discriminator", round_to(breakdown.last_losses().first, 4)},
                        {"generator", round_to(breakdown.last_losses().second, 4)}};
  out["skipped_updates"] = breakdown.skipped_updates();  // in the timed steps
  if (!a.overrides.empty()) out["overrides"] = a.overrides;
  return out;
}

int run(const Args& a) {
  std::vector<Device> devices;
  try {
    devices = parse_bench_devices(a.devices);
  } catch (const Error& e) {
    std::cerr << "gan_bench: " << e.what() << "\n";
    return 2;
  }
  const bool on_cuda = devices.front().is_cuda();
  if (const std::string why = usage_error(a, on_cuda); !why.empty()) {
    std::cerr << "gan_bench: " << why << "\n";
    return 2;
  }
  // The model's config resolved as gan_train resolves its own; its errors (a --set, bf16 on a CPU
  // without it) are usage errors too.
  gan::RunSetup run;
  try {
    run = jobs::resolve_training_config(bench_request(a), /*open_data=*/false);
    if (const std::string why = lazy_window_error(a, lazy_interval(run)); !why.empty()) GANTRY_FAIL(why);
  } catch (const Error& e) {
    std::cerr << "gan_bench: " << e.what() << "\n";
    return 2;
  }
  // Note [conv roofline] times the CPU's convolution primitives, and Note [FMA peak] the CPU's
  // FMA units: there is no CUDA counterpart yet.
  const bool roofline = a.roofline && has_conv_roofline(devices.front().kind);
  const bool fma_peak = a.fma_peak && !on_cuda;
  std::shared_ptr<distribute::Strategy> strategy = jobs::make_run_strategy(run);
  std::unique_ptr<gan::GanEstimator> estimator = jobs::make_run_estimator(run, strategy);
  auto breakdown = std::make_shared<BreakdownHook>();
  if (const int64_t interval = lazy_interval(run); interval > 1) breakdown->split_lazy_steps(interval);
  const Measurement m = time_steps(*estimator, a, run, devices, roofline, breakdown);
  nlohmann::ordered_json out = report(a, run, devices, *strategy, m, *breakdown, roofline, fma_peak);
  // The networks' sizes, to tell at a glance that two builds bench the same model.
  out["parameters"] = {{"generator", estimator->replica(0).generator.module->num_parameters()},
                       {"discriminator", estimator->replica(0).discriminator.module->num_parameters()}};
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace gantry

namespace {

// --model's choices: the reference models' names.
std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const gantry::bench::ReferenceModel& m : gantry::bench::reference_models()) names.emplace_back(m.name);
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  const CLI::Range kPositive(int64_t{1}, int64_t{1} << 40);
  const CLI::Range kNonNegative(int64_t{0}, int64_t{1} << 40);
  gantry::Args args;
  CLI::App app{"gan_bench: images/s of one DCGAN-32 training step (D then G update) through "
               "GanEstimator, comparable with shared/reference/torch_dcgan_bench.py"};
  app.add_option("--model", args.model,
                 "dcgan, resnet (SNGAN-style, hinge loss; --ngf/--ndf are its widths) or stylegan2 "
                 "(StyleGAN2-32, channel_base 1024; --ngf/--ndf are G's/D's channel_max, lazy R1 "
                 "amortised: needs --steps >= 16) or r3gan (4 stages of width --ngf/--ndf, one block each, "
                 "relativistic pairing loss) or transformer (GAT-style, token width --ngf/--ndf, depth 4, 4 heads, "
                 "patch 4, G with 4 output layers, relativistic pairing loss; a multiple of 16 with 4 heads)")
      ->check(CLI::IsMember(model_names()))->capture_default_str();
  app.add_option("--nz", args.nz, "noise dimension")->check(kPositive)->capture_default_str();
  app.add_option("--ngf", args.ngf, "generator width")->check(kPositive)->capture_default_str();
  app.add_option("--ndf", args.ndf, "discriminator width")->check(kPositive)->capture_default_str();
  app.add_option("--batch", args.batch, "global batch size")->check(kPositive)->capture_default_str();
  app.add_option("--threads", args.threads, "total CPU thread budget (replicas split it evenly)")
      ->check(kPositive)->capture_default_str();
  app.add_option("--devices", args.devices,
                 "cpu:0 (one replica), cpu:0,cpu:1 (two replicas), cuda:0 or cuda:0,cuda:1 (one replica "
                 "per GPU; the clock reads after a device synchronize)")
      ->capture_default_str();
  app.add_option("--resolution", args.resolution, "--model dcgan: 32, or 64 for DCGAN-64 (as the reference's "
                 "--resolution 64)")
      ->check(CLI::IsMember({int64_t{32}, int64_t{64}}))->capture_default_str();
  app.add_option("--steps", args.steps, "timed global steps")->check(kPositive)->capture_default_str();
  app.add_option("--warmup", args.warmup, "untimed global steps first")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--seed", args.seed, "seed of the weights, noise and the fixed batch")->capture_default_str();
  app.add_flag("--roofline,!--no-roofline", args.roofline,
               "time the step's convolutions as raw oneDNN primitives afterwards and report "
               "achieved vs roofline GFLOP/s (CPU devices only)")
      ->capture_default_str();
  app.add_flag("--fma-peak,!--no-fma-peak", args.fma_peak,
               "measure the CPU's FMA peak (f32, and bf16 where the CPU has avx512_bf16) on --threads "
               "threads afterwards and report the step's convolution GFLOP/s as a fraction of it "
               "(needs --roofline for the step's GFLOP)")
      ->capture_default_str();
  app.add_option("--mixed-precision", args.mixed_precision,
                 "none; bf16: convolutions read bf16 operands and accumulate in f32 (the roofline "
                 "then compares against f32 primitives); fp16 (CUDA only): f16 operands with dynamic "
                 "loss scaling, as the reference's --fp16")
      ->check(CLI::IsMember({"none", "bf16", "fp16"}))->capture_default_str();
  app.add_option("--augment", args.augment,
                 "augment every image D sees with this comma-separated policy, e.g. color,translation,cutout "
                 "(default: none)");
  app.add_option("--augment-p", args.augment_p, "probability of each augmentation transform")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--micro-batches", args.micro_batches,
                 "gradient accumulation: each replica's shard as this many micro-batches per update")
      ->check(kPositive)->capture_default_str();
  app.add_option("--set", args.overrides,
                 "override a key of the model's run config (bench/configs/<model>.json) as gan_train --set does, "
                 "after the options above: key.path=value (repeatable; listed in the report)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_bench", [&] { return gantry::run(args); });
}
