#include "bench/allocation_counter.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

// The one replacement set of operator new/delete (this is the one source file of a binary that
// includes it).
#include "instrumentation/counting_operator_new.h"

// Note [counting allocations]: this file interposes the C library's allocation functions
// (malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc, pvalloc; forwarding
// to glibc's __libc_* entry points), and instrumentation/counting_operator_new.h replaces the
// global operator new/delete on top of malloc/free, with relaxed atomic counters. So gan_bench's
// `heap_allocations_per_step` counts every heap allocation a training step makes, whoever makes it: Gantry's C++ objects (autograd nodes, shared_ptr control blocks,
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

namespace gantry::bench {
namespace {

std::atomic<uint64_t> g_heap_allocations{0};

// Note [allocation trace]: with GANTRY_ALLOC_TRACE=1, while the timed steps run, every counted allocation also stores its
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

}  // namespace
}  // namespace gantry::bench

extern "C" {
void* malloc(size_t size) {
  gantry::bench::count_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  gantry::bench::count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  gantry::bench::count_allocation();
  return __libc_realloc(ptr, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  gantry::bench::count_allocation();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  gantry::bench::count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  gantry::bench::count_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr && size != 0) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t size) {
  gantry::bench::count_allocation();
  return __libc_valloc(size);
}
void* pvalloc(size_t size) {
  gantry::bench::count_allocation();
  return __libc_pvalloc(size);
}
void free(void* ptr) { __libc_free(ptr); }
}

namespace gantry::bench {

uint64_t heap_allocations() { return g_heap_allocations.load(std::memory_order_relaxed); }

uint64_t operator_new_calls() { return static_cast<uint64_t>(instrumentation::operator_new_calls()); }

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

namespace {

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
      names.insert_or_assign(a, std::string(1, '?'));  // not `= "?"`: GCC 12 warns (-Wrestrict, a false positive)
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
                             "memalign", "operator new", "(anonymous namespace)::", "gantry::instrumentation::", "?",
                             "std::vector", "void std::vector", "std::_Vector", "std::__cxx11::",
                             "std::_Hashtable", "std::__detail", "std::_Rb_tree", "std::map",
                             "std::__shared", "std::shared_ptr", "std::allocat", "std::unique_ptr",
                             "std::_Function_base", "std::function", "std::deque", "std::_Deque",
                             "std::basic_string", "__gnu_cxx::", "void std::__", "void* std::"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

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

}  // namespace gantry::bench
