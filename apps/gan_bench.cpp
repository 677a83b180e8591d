// gan_bench: throughput of one full GAN training step of the reference DCGAN-32
// (shared/reference/README.md) through the real estimator code path: GanEstimator::train with
// the "dcgan" generator and discriminator from the model registry, the non-saturating loss,
// Adam(2e-4, 0.5, 0.999) for both networks and the schedule g=1, d=1 with reuse_fake (the G
// update reuses the D update's fake batch, as the reference loop does). The input is one fixed
// random batch in [-1, 1], like the reference's `real`, fed through a BatchSource.
//
// Prints one JSON line with the reference benchmark's fields (impl, threads, ngf, ndf, batch,
// steps, seconds, images_per_second, ms_per_step) plus replicas, peak RSS, the per-phase time
// breakdown averaged over the timed steps, heap allocations and minor page faults per step, and
// the step's convolution GFLOP/s against the raw oneDNN primitives' (Note [conv roofline]).
// Exit codes: 0 success, 2 usage error, 1 runtime failure.
#include <CLI/CLI.hpp>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <map>
#include <new>
#include <random>
#include <sstream>
#include <unordered_map>

#include "apps/app_support.h"
#include "backend/cpu/conv_roofline.h"
#include "core/ops/ops.h"
#include "backend/conv_math.h"
#include "core/threads.h"
#include "gan/gan_estimator.h"
#include "gan/networks.h"
#include "gan/run_config.h"
#include "losses/adversarial_loss.h"
#include "nn/adam.h"

// ---- Note [counting allocations]
// This binary interposes the C library's allocation functions (malloc, calloc, realloc,
// aligned_alloc, posix_memalign, memalign, valloc, pvalloc; forwarding to glibc's __libc_*
// entry points) and replaces the global operator new/delete on top of malloc/free, with relaxed
// atomic counters. So `heap_allocations_per_step` counts every heap allocation a training step
// makes, whoever makes it: Gantry's C++ objects (autograd nodes, shared_ptr control blocks,
// vectors), tensor buffers the CPU allocator has to take from the system, oneDNN's and the
// OpenMP runtime's mallocs. `operator_new_per_step` is the C++ share of it.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
void __libc_free(void* ptr);
}

namespace {

std::atomic<uint64_t> g_heap_allocations{0};
std::atomic<uint64_t> g_operator_new{0};

// ---- Note [allocation trace]
// GANTRY_ALLOC_TRACE=1: while the timed steps run, every counted allocation also stores its
// backtrace in a fixed table (no allocation of its own: static storage, an atomic index, and a
// thread-local flag so that backtrace() calling malloc is not traced again). Afterwards the
// call sites are symbolised and the top ones printed to stderr, per step.
constexpr int kTraceFrames = 20;
constexpr size_t kTraceCapacity = size_t{1} << 16;
struct TraceRecord {
  void* frames[kTraceFrames];
  int depth;
};
TraceRecord g_trace[kTraceCapacity];
std::atomic<size_t> g_trace_next{0};
std::atomic<bool> g_tracing{false};
thread_local bool t_in_trace = false;

[[gnu::noinline]] void trace_allocation() {
  if (t_in_trace) return;
  t_in_trace = true;
  const size_t i = g_trace_next.fetch_add(1, std::memory_order_relaxed);
  if (i < kTraceCapacity) g_trace[i].depth = backtrace(g_trace[i].frames, kTraceFrames);
  t_in_trace = false;
}

inline void count_allocation() {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (g_tracing.load(std::memory_order_relaxed)) trace_allocation();
}

// Out of line, so GCC does not see malloc/free through the inlined operators and mistake the
// pair for a new/free mismatch (-Wmismatched-new-delete).
[[gnu::noinline]] void* counted_new(std::size_t size) {
  g_operator_new.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}

[[gnu::noinline]] void* counted_aligned_new(std::size_t size, std::align_val_t align) {
  g_operator_new.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(align);
  const std::size_t rounded = (size == 0 ? a : (size + a - 1) / a * a);
  return std::aligned_alloc(a, rounded);
}

[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }

}  // namespace

extern "C" {
void* malloc(size_t size) {
  count_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  count_allocation();
  return __libc_realloc(ptr, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  count_allocation();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  count_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr && size != 0) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t size) {
  count_allocation();
  return __libc_valloc(size);
}
void* pvalloc(size_t size) {
  count_allocation();
  return __libc_pvalloc(size);
}
void free(void* ptr) { __libc_free(ptr); }
}

void* operator new(std::size_t size) {
  if (void* p = counted_new(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  if (void* p = counted_new(size)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_new(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_new(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  if (void* p = counted_aligned_new(size, align)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  if (void* p = counted_aligned_new(size, align)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned_new(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned_new(size, align);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace gantry {
namespace {

// Keep in step with project(gantry VERSION ...) in the top-level CMakeLists.txt.
constexpr const char* kVersion = "0.1.0";

struct Args {
  int64_t nz = 100;
  int64_t ngf = 64;
  int64_t ndf = 64;
  int64_t batch = 64;
  int threads = 2;
  std::string devices = "cpu:0";
  int64_t steps = 30;
  int64_t warmup = 5;
  uint64_t seed = 0;
  bool roofline = true;
  std::string mixed_precision = "none";
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
  }
  const gan::TimeBreakdown& sum() const { return sum_; }
  int64_t steps() const { return steps_; }
  double best_total() const { return best_total_; }  // the fastest step's wall time, s
  // The last step's (discriminator, generator) losses.
  std::pair<float, float> last_losses() const { return last_losses_; }

 private:
  gan::TimeBreakdown sum_;
  std::pair<float, float> last_losses_;
  double best_total_ = 0;
  int64_t steps_ = 0;
};

// The device list as gan_train reads it (gan::parse_devices); the bench runs CPU replicas only.
std::vector<Device> parse_cpu_devices(const std::string& text) {
  std::vector<Device> devices = gan::parse_devices(text, "--devices");
  for (const Device& d : devices)
    GANTRY_CHECK(d.is_cpu(), "--devices: gan_bench runs CPU replicas only, found ", d.str());
  return devices;
}

gan::GanSpec reference_dcgan_spec(const Args& a) {
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};  // (C, H, W)
  ctx.noise_dim = a.nz;
  nlohmann::json g_config = {{"type", "dcgan"}, {"ngf", a.ngf}, {"init", "dcgan"}};
  nlohmann::json d_config = {{"type", "dcgan"}, {"ndf", a.ndf}, {"init", "dcgan"}};
  gan::BuiltNetwork g = gan::make_generator(g_config, "generator", ctx);
  gan::BuiltNetwork d = gan::make_discriminator(d_config, "discriminator", ctx);

  gan::GanSpec spec;
  spec.generator_fn = g.fn;
  spec.discriminator_fn = d.fn;
  spec.noise_shape = g.noise_shape;  // (nz, 1, 1)
  spec.loss = losses::make_non_saturating();
  gan::OptimizerFn adam = [](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    return std::make_unique<nn::Adam>(params, nn::AdamOptions{.lr = 2e-4, .beta1 = 0.5, .beta2 = 0.999});
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  spec.schedule = gan::TrainSchedule{.generator_steps = 1, .discriminator_steps = 1, .reuse_fake = true};
  return spec;
}

// One fixed batch (N, 1, 32, 32) uniform in [-1, 1], as the reference's `real`.
data::Batch fixed_batch(int64_t n, uint64_t seed) {
  std::mt19937 gen(static_cast<std::mt19937::result_type>(seed));
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(n * 32 * 32));
  for (float& v : values) v = uniform(gen);
  data::Batch b;
  b.images = ops::from_vector(values, Shape{n, 1, 32, 32});
  for (int64_t i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.epochs.push_back(0);
  }
  return b;
}

// ---- Note [allocation trace], the report.
bool alloc_trace_requested() {
  const char* v = std::getenv("GANTRY_ALLOC_TRACE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

void start_alloc_trace() {
  void* warm[2];
  backtrace(warm, 2);  // the first call loads libgcc_s (and allocates): do it before tracing
  g_trace_next.store(0);
  g_tracing.store(true);
}

// "ns::f(int, float)::{lambda(...)#1}" -> "ns::f()::{lambda()#1}": parameter lists dropped.
std::string shorten(const std::string& name) {
  std::string out;
  int depth = 0;
  for (char c : name) {
    if (c == '(' && depth++ == 0) out += '(';
    if (c == ')' && --depth == 0) out += ')';
    if (depth == 0 && c != ')') out += c;
  }
  return out.size() > 110 ? out.substr(0, 107) + "..." : out;
}

// Names return addresses: addr2line for the executable (dladdr cannot name its static functions
// and lambdas), dladdr's exported symbol for the shared libraries (oneDNN, libgomp, libstdc++).
std::unordered_map<void*, std::string> symbolize(const std::vector<void*>& addresses) {
  std::unordered_map<void*, std::string> names;
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&alloc_trace_requested), &self);
  char query_path[] = "/tmp/gan_bench_trace_XXXXXX";
  const int fd = mkstemp(query_path);
  FILE* query = fd >= 0 ? fdopen(fd, "w") : nullptr;
  std::vector<void*> in_exe;
  for (void* a : addresses) {
    Dl_info info{};
    if (dladdr(a, &info) == 0) {
      names[a] = "?";
    } else if (info.dli_fbase == self.dli_fbase && query) {
      in_exe.push_back(a);
      std::fprintf(query, "0x%zx\n", static_cast<size_t>(static_cast<char*>(a) -
                                                         static_cast<char*>(info.dli_fbase) - 1));
    } else {
      std::string lib = info.dli_fname ? info.dli_fname : "?";
      lib = lib.substr(lib.rfind('/') + 1);
      int status = -1;
      char* demangled = info.dli_sname ? abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status)
                                       : nullptr;
      names[a] = lib + ":" + (status == 0 ? demangled : info.dli_sname ? info.dli_sname : "?");
      std::free(demangled);
    }
  }
  if (query) std::fclose(query);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (!in_exe.empty() && n > 0) {
    exe[n] = '\0';
    const std::string command = std::string("addr2line -f -C -e '") + exe + "' < " + query_path;
    if (FILE* f = popen(command.c_str(), "r")) {
      char function[8192], where[4096];
      for (void* a : in_exe) {
        if (!std::fgets(function, sizeof function, f) || !std::fgets(where, sizeof where, f)) break;
        std::string fn(function), loc(where);
        fn.pop_back();
        loc.pop_back();
        names[a] = fn + " @" + loc.substr(loc.rfind('/') + 1);
      }
      pclose(f);
    }
  }
  std::remove(query_path);
  return names;
}

// The allocator's own frames and the standard library's inline templates, skipped to reach the
// code that asked for the memory.
bool allocator_frame(const std::string& name) {
  for (const char* prefix : {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc",
                             "memalign", "operator new", "(anonymous namespace)::", "?",
                             "std::vector", "void std::vector", "std::_Vector", "std::__cxx11::",
                             "std::_Hashtable", "std::__detail", "std::_Rb_tree", "std::map",
                             "std::__shared", "std::shared_ptr", "std::allocat", "std::unique_ptr",
                             "std::_Function_base", "std::function", "std::deque", "std::_Deque",
                             "std::basic_string", "__gnu_cxx::", "void std::__", "void* std::"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

void report_alloc_trace(double steps) {
  g_tracing.store(false);
  const size_t traced = std::min(g_trace_next.load(), kTraceCapacity);
  std::vector<void*> addresses;
  for (size_t i = 0; i < traced; ++i)
    addresses.insert(addresses.end(), g_trace[i].frames, g_trace[i].frames + g_trace[i].depth);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  const auto names = symbolize(addresses);
  // Per call site: the first three frames past the allocator and, from inside a library, the
  // first two Gantry frames (the calls that led there). Counts: all, and operator new's share.
  std::map<std::string, std::pair<uint64_t, uint64_t>> sites;
  for (size_t i = 0; i < traced; ++i) {
    std::string key;
    int kept = 0, gantry_kept = 0;
    bool is_new = false;
    for (int f = 0; f < g_trace[i].depth && (kept < 3 || gantry_kept < 2); ++f) {
      const std::string& name = names.at(g_trace[i].frames[f]);
      is_new = is_new || name.rfind("operator new", 0) == 0 ||
               name.find("counted_new") != std::string::npos;
      if (kept == 0 && allocator_frame(name)) continue;
      const bool gantry = name.rfind("gantry::", 0) == 0;
      if (kept < 3 || gantry) {
        key += kept == 0 ? "" : kept < 3 || gantry_kept > 0 ? "\n        <- " : "\n        <- ... <- ";
        key += shorten(name);
        ++kept;
        gantry_kept += gantry;
      }
    }
    auto& [count, news] = sites[key];
    ++count;
    news += is_new;
  }
  // Totals by origin: the library the first frame past the allocator is in, or the Gantry
  // namespace ("gantry::gan").
  std::map<std::string, std::pair<uint64_t, uint64_t>> origins;
  for (const auto& [key, counts] : sites) {
    std::string origin = key.substr(0, key.find_first_of(":\n"));
    if (origin == "gantry") {
      const size_t end = key.find("::", 8);
      origin = key.substr(0, std::min(end, key.find_first_of("(\n ")));
    }
    origins[origin].first += counts.first;
    origins[origin].second += counts.second;
  }
  std::fprintf(stderr, "alloc trace: per step by origin (all / operator new):");
  for (const auto& [origin, counts] : origins)
    std::fprintf(stderr, "  %s %.1f / %.1f", origin.c_str(),
                 static_cast<double>(counts.first) / steps, static_cast<double>(counts.second) / steps);
  std::fprintf(stderr, "\n");
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [key, counts] : sites) top.push_back({counts.first, key});
  std::sort(top.begin(), top.end(), std::greater<>());
  std::fprintf(stderr, "alloc trace: %zu allocations traced%s, %.1f per step; top call sites "
               "(per step: all, operator new):\n", traced,
               g_trace_next.load() > kTraceCapacity ? " (table full)" : "",
               static_cast<double>(traced) / steps);
  for (size_t i = 0; i < top.size() && i < 60; ++i)
    std::fprintf(stderr, "%8.1f %8.1f  %s\n", static_cast<double>(top[i].first) / steps,
                 static_cast<double>(sites[top[i].second].second) / steps, top[i].second.c_str());
}

double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

int run(const Args& a) {
  std::vector<Device> devices;
  try {
    devices = parse_cpu_devices(a.devices);
  } catch (const Error& e) {
    std::cerr << "gan_bench: " << e.what() << "\n";
    return 2;
  }
  set_num_threads(a.threads);
  set_conv_math(a.mixed_precision == "bf16" ? ConvMath::BF16 : ConvMath::F32);
  for (const Device& d : devices) {
    const std::string unavailable = conv_math_unavailable(conv_math(), d);
    GANTRY_CHECK(unavailable.empty(), "--mixed-precision: ", unavailable);
  }
  std::shared_ptr<distribute::Strategy> strategy =
      devices.size() == 1 ? distribute::make_one_device_strategy(devices[0])
                          : distribute::make_mirrored_strategy(devices);
  gan::GanEstimator estimator(reference_dcgan_spec(a), strategy, a.seed);
  const data::Batch real = fixed_batch(a.batch, a.seed);
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

  cpu::clear_recorded_convs();
  cpu::set_conv_recording(a.roofline);  // Note [conv roofline]
  auto breakdown = std::make_shared<BreakdownHook>();
  const std::vector<std::shared_ptr<gan::Hook>> hooks{breakdown};  // made before counting
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  const uint64_t allocations_before = g_heap_allocations.load(std::memory_order_relaxed);
  const uint64_t new_before = g_operator_new.load(std::memory_order_relaxed);
  const bool trace = alloc_trace_requested();
  if (trace) start_alloc_trace();  // Note [allocation trace]
  const auto t0 = std::chrono::steady_clock::now();
  estimator.train(source, a.warmup + a.steps, hooks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t allocations = g_heap_allocations.load(std::memory_order_relaxed) - allocations_before;
  const uint64_t news = g_operator_new.load(std::memory_order_relaxed) - new_before;
  if (trace) report_alloc_trace(static_cast<double>(a.steps));
  cpu::set_conv_recording(false);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);

  const double steps = static_cast<double>(a.steps);
  const double ms = 1000.0 / steps;
  const gan::TimeBreakdown& t = breakdown->sum();
  nlohmann::ordered_json out;
  out["impl"] = std::string("gantry-") + kVersion;
  out["threads"] = a.threads;
  out["mixed_precision"] = a.mixed_precision;
  out["ngf"] = a.ngf;
  out["ndf"] = a.ndf;
  out["batch"] = a.batch;
  out["steps"] = a.steps;
  out["seconds"] = round_to(seconds, 4);
  out["images_per_second"] = round_to(static_cast<double>(a.batch) * steps / seconds, 1);
  out["ms_per_step"] = round_to(seconds * ms, 2);
  out["replicas"] = strategy->num_replicas_in_sync();
  out["peak_rss_mb"] = round_to(static_cast<double>(after.ru_maxrss) / 1024.0, 1);  // ru_maxrss: KiB
  out["breakdown_ms"] = {{"input_wait", round_to(t.input_wait * ms, 3)},
                         {"compute", round_to(t.compute * ms, 3)},
                         {"all_reduce", round_to(t.all_reduce * ms, 3)},
                         {"update", round_to(t.update * ms, 3)},
                         {"total", round_to(t.total * ms, 3)}};
  // Note [counting allocations]: every malloc-family call; operator new is a part of them.
  out["heap_allocations_per_step"] = round_to(static_cast<double>(allocations) / steps, 1);
  out["operator_new_per_step"] = round_to(static_cast<double>(news) / steps, 1);
  if (a.roofline) {
    // Note [conv roofline]: the timed steps' convolutions as raw oneDNN primitives. Replicas
    // run their convolutions concurrently, so the step's roofline time is one replica's share.
    double flops = 0, roofline_seconds = 0;
    for (const cpu::RecordedConv& c : cpu::recorded_convs()) {
      flops += c.call.flops() * static_cast<double>(c.count);
      roofline_seconds += cpu::raw_conv_seconds(c.call) * static_cast<double>(c.count);
    }
    const double replicas = static_cast<double>(strategy->num_replicas_in_sync());
    const double conv_gflop_per_step = flops / steps * 1e-9;
    const double roofline_step_seconds = roofline_seconds / steps / replicas;
    const double step_seconds = seconds / steps;
    out["conv_gflop_per_step"] = round_to(conv_gflop_per_step, 3);
    out["achieved_gflops"] = round_to(conv_gflop_per_step / step_seconds, 1);
    out["roofline_gflops"] = round_to(conv_gflop_per_step / roofline_step_seconds, 1);
    out["roofline_ms_per_step"] = round_to(roofline_step_seconds * 1000.0, 2);
    // The roofline is a best-of-rounds figure (an uncontended estimate), so next to the ratio
    // against the mean step it is also given against the fastest step, its like for like.
    out["roofline_ratio"] = round_to(roofline_step_seconds / step_seconds, 3);
    out["roofline_ratio_best_step"] = round_to(roofline_step_seconds / breakdown->best_total(), 3);
  }
  out["minor_faults_per_step"] = round_to(static_cast<double>(after.ru_minflt - before.ru_minflt) / steps, 1);
  // The last step's losses, to show the networks really trained (finite, not stuck).
  out["last_losses"] = {{"discriminator", round_to(breakdown->last_losses().first, 4)},
                        {"generator", round_to(breakdown->last_losses().second, 4)}};
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  const CLI::Range kPositive(int64_t{1}, int64_t{1} << 40);
  const CLI::Range kNonNegative(int64_t{0}, int64_t{1} << 40);
  gantry::Args args;
  CLI::App app{"gan_bench: images/s of one DCGAN-32 training step (D then G update) through "
               "GanEstimator, comparable with shared/reference/torch_dcgan_bench.py"};
  app.add_option("--nz", args.nz, "noise dimension")->check(kPositive)->capture_default_str();
  app.add_option("--ngf", args.ngf, "generator width")->check(kPositive)->capture_default_str();
  app.add_option("--ndf", args.ndf, "discriminator width")->check(kPositive)->capture_default_str();
  app.add_option("--batch", args.batch, "global batch size")->check(kPositive)->capture_default_str();
  app.add_option("--threads", args.threads, "total CPU thread budget (replicas split it evenly)")
      ->check(kPositive)->capture_default_str();
  app.add_option("--devices", args.devices, "cpu:0 (one replica) or cpu:0,cpu:1 (two replicas)")
      ->capture_default_str();
  app.add_option("--steps", args.steps, "timed global steps")->check(kPositive)->capture_default_str();
  app.add_option("--warmup", args.warmup, "untimed global steps first")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--seed", args.seed, "seed of the weights, noise and the fixed batch")->capture_default_str();
  app.add_flag("--roofline,!--no-roofline", args.roofline,
               "time the step's convolutions as raw oneDNN primitives afterwards and report "
               "achieved vs roofline GFLOP/s")
      ->capture_default_str();
  app.add_option("--mixed-precision", args.mixed_precision,
                 "none, or bf16: convolutions read bf16 operands and accumulate in f32 (the roofline "
                 "then compares against f32 primitives)")
      ->check(CLI::IsMember({"none", "bf16"}))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_bench", [&] { return gantry::run(args); });
}
