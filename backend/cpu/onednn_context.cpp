#include "backend/cpu/onednn_context.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vector_isa.h"
#include "base/error.h"
#include "base/threads.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;

std::atomic<ConvLayout> g_conv_layout{ConvLayout::Auto};
std::atomic<int> g_forced_channel_block{0};

// The floats per vector register of the ISA oneDNN's JIT runs (Note [channel block]).
int isa_channel_block() {
  switch (onednn_cpu_isa()) {
    case dnnl::cpu_isa::avx512_mic:
    case dnnl::cpu_isa::avx512_mic_4ops:
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return 16;
    default: return 8;  // sse41, avx, avx2, avx2_vnni
  }
}

struct ScratchBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data); }
};

// Lets the cache be searched with a string_view (no std::string built per lookup).
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct PrimitiveCache {
  std::mutex mutex;     // guards entries; held only for lookups and inserts
  std::mutex creating;  // one creation at a time (create_cached_primitive says why)
  std::unordered_map<std::string, std::shared_ptr<const CachedPrimitive>, KeyHash, std::equal_to<>>
      entries;
};

// This thread's memory objects for one cached primitive: one per argument as the caller holds
// it, one per reordered argument in the primitive's layout, and the scratchpad.
struct ExecMemories {
  std::vector<dnnl::memory> user, wanted, blocked, blocked_bf16;
  dnnl::memory scratchpad;
};

ExecMemories& exec_memories(const CachedPrimitive& prim) {
  // Cached primitives are never evicted, so their addresses are stable keys.
  thread_local std::unordered_map<const CachedPrimitive*, std::unique_ptr<ExecMemories>> states;
  std::unique_ptr<ExecMemories>& state = states[&prim];
  if (!state) {
    state = std::make_unique<ExecMemories>();
    const dnnl::engine& eng = onednn_engine();
    for (const PrimitiveArg& arg : prim.args) {
      state->user.emplace_back(arg.user, eng, nullptr);
      state->wanted.emplace_back(arg.wanted, eng, nullptr);
      state->blocked.emplace_back(arg.may_block() ? dnnl::memory(arg.blocked, eng, nullptr)
                                                  : dnnl::memory());
      state->blocked_bf16.emplace_back(arg.may_block() ? dnnl::memory(arg.blocked_bf16, eng, nullptr)
                                                       : dnnl::memory());
    }
    if (prim.scratchpad.get_size() > 0) {
      state->scratchpad = dnnl::memory(prim.scratchpad, eng, nullptr);
    }
  }
  return *state;
}

// Whether an activation of these dims can be held in ChannelBlocked (4-D, whole channel blocks).
bool blockable(const memory::dims& dims) {
  return dims.size() == 4 && dims[1] % channel_block() == 0;
}

void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success) throw dnnl::error(status, what);
}

// Runs reorder `r` on one thread when `small` (a reorder splits its work over the threads OpenMP
// allows when it runs: Note [small oneDNN calls]), else on the thread budget.
void run_reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to,
                 dnnl::stream& stream, bool small) {
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  std::optional<ThreadBudgetScope> one_thread;
  if (small) one_thread.emplace(1);
  apply_thread_budget();
  check(dnnl_primitive_execute(r.get(), stream.get(), 2, args), "could not execute a reorder");
}

PrimitiveCache& cache() {
  static PrimitiveCache c;
  return c;
}

}  // namespace

dnnl::cpu_isa onednn_cpu_isa() {
  // Set before oneDNN's first query fixes its ISA (every query and the engine come through here):
  // Note [CPU ISA limit] in vector_isa.h.
  static const bool limited = [] {
    const std::string& limit = max_cpu_isa_setting();
    if (limit.empty() || std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) return false;
    static const std::pair<const char*, dnnl_cpu_isa_t> kIsas[] = {
        {"SSE41", dnnl_cpu_isa_sse41},
        {"AVX", dnnl_cpu_isa_avx},
        {"AVX2", dnnl_cpu_isa_avx2},
        {"AVX2_VNNI", dnnl_cpu_isa_avx2_vnni},
        {"AVX512_CORE", dnnl_cpu_isa_avx512_core},
        {"AVX512_CORE_VNNI", dnnl_cpu_isa_avx512_core_vnni},
        {"AVX512_CORE_BF16", dnnl_cpu_isa_avx512_core_bf16},
        {"AVX512_CORE_AMX", dnnl_cpu_isa_avx512_core_amx},
        {"ALL", dnnl_cpu_isa_all}};
    for (const auto& [name, isa] : kIsas)
      if (limit == name) {
        GANTRY_CHECK(dnnl_set_max_cpu_isa(isa) == dnnl_success, "GANTRY_MAX_CPU_ISA=", limit,
                     ": oneDNN refused the limit (it had already chosen its kernels)");
        return true;
      }
    return false;
  }();
  (void)limited;
  return dnnl::get_effective_cpu_isa();
}

dnnl::engine& onednn_engine() {
  static dnnl::engine engine = (onednn_cpu_isa(), dnnl::engine(dnnl::engine::kind::cpu, 0));
  return engine;
}

dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

dnnl::primitive_attr onednn_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory::dims onednn_dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

memory::desc plain_desc(const memory::dims& dims, memory::data_type dt) {
  memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return memory::desc(dims, dt, strides);
}

int channel_block() {
  if (const int forced = g_forced_channel_block.load(std::memory_order_relaxed)) return forced;
  static const int block = isa_channel_block();
  return block;
}

void set_channel_block_for_testing(int block) {
  GANTRY_CHECK(block == 0 || block == 8 || block == 16,
               "set_channel_block_for_testing: expected 0, 8 or 16, found ", block);
  g_forced_channel_block.store(block, std::memory_order_relaxed);
}

memory::desc channel_blocked_desc(const memory::dims& dims, memory::data_type dt) {
  using tag = memory::format_tag;
  const tag blocked = channel_block() == 16 ? tag::aBcd16b : tag::aBcd8b;
  return memory::desc(dims, dt, blocked);
}

memory::desc any_desc(const memory::dims& dims) { return any_desc(dims, memory::data_type::f32); }

memory::desc any_desc(const memory::dims& dims, memory::data_type dt) {
  return memory::desc(dims, dt, memory::format_tag::any);
}

bool onednn_has_native_bf16() {
  const dnnl::cpu_isa isa = onednn_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

void CachedPrimitive::add_arg(int id, bool output, const memory::desc& user,
                              const memory::desc& wanted, bool activation) {
  PrimitiveArg arg{id, output, user, wanted, {}, {}, {}, {}, {}};
  arg.small = std::max(user.get_size(), wanted.get_size()) < kSmallReorderBytes;
  const dnnl::engine& eng = onednn_engine();
  if (user != wanted) {
    arg.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, wanted, eng, user))
                         : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, wanted));
  }
  if (activation && blockable(user.dims()) && user.data_type() == memory::data_type::f32) {
    arg.blocked = channel_blocked_desc(user.dims());
    arg.blocked_bf16 = channel_blocked_desc(user.dims(), memory::data_type::bf16);
    auto to_wanted = [&](const memory::desc& from) {
      return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, wanted));
    };
    if (!output && arg.blocked != wanted) arg.blocked_reorder = to_wanted(arg.blocked);
    if (!output && arg.blocked_bf16 != wanted) arg.blocked_bf16_reorder = to_wanted(arg.blocked_bf16);
  }
  args.push_back(std::move(arg));
}

Layout CachedPrimitive::output_layout(int id, Layout accepted) const {
  for (const PrimitiveArg& arg : args) {
    if (arg.id != id) continue;
    if (accepted != Layout::Plain && arg.wants_blocked()) return Layout::ChannelBlocked;
    if (accepted == Layout::ChannelBlockedBf16 && arg.wants_blocked_bf16()) return Layout::ChannelBlockedBf16;
    return Layout::Plain;
  }
  return Layout::Plain;
}

PrimitiveKey::PrimitiveKey(const char* op) : op_(op) {
  append(op);
  add(num_threads());
  add(channel_block());
}

void PrimitiveKey::append(std::string_view s) {
  GANTRY_CHECK(size_ + s.size() <= kCapacity, op_, ": internal error, primitive cache key longer "
               "than ", kCapacity, " characters");
  s.copy(text_ + size_, s.size());
  size_ += s.size();
}

PrimitiveKey& PrimitiveKey::add(int64_t v) {
  char buf[24];
  buf[0] = ',';
  auto res = std::to_chars(buf + 1, buf + sizeof(buf), v);
  append({buf, static_cast<size_t>(res.ptr - buf)});
  return *this;
}

PrimitiveKey& PrimitiveKey::add(const Shape& s) {
  append(",(");
  for (int64_t d : s) add(d);
  append(")");
  return *this;
}

std::shared_ptr<const CachedPrimitive> find_cached_primitive(const PrimitiveKey& key) {
  PrimitiveCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key.str());
  return it != c.entries.end() ? it->second : nullptr;
}

std::shared_ptr<const CachedPrimitive> create_cached_primitive(
    const PrimitiveKey& key, const std::function<CachedPrimitive()>& make) {
  PrimitiveCache& c = cache();
  // One creation at a time, outside the lookup lock so cache hits never wait for a JIT
  // compilation. Replicas ask for the same primitives at the same moment (their first step):
  // the second waits and takes the first's instead of compiling its own.
  std::lock_guard<std::mutex> creating(c.creating);
  if (auto hit = find_cached_primitive(key)) return hit;
  std::shared_ptr<const CachedPrimitive> made;
  apply_thread_budget();
  try {
    made = std::make_shared<const CachedPrimitive>(make());
  } catch (const dnnl::error& e) {
    GANTRY_FAIL(key.op(), ": oneDNN could not create a primitive for [", key.str(),
                "]: ", e.what());
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.entries.emplace(std::string(key.str()), std::move(made)).first->second;
}

size_t primitive_cache_size() {
  PrimitiveCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.entries.size();
}

void* thread_scratch(int slot, size_t bytes) {
  thread_local std::vector<std::unique_ptr<ScratchBuffer>> buffers;
  if (static_cast<int>(buffers.size()) <= slot) buffers.resize(slot + 1);
  auto& buf = buffers[slot];
  if (!buf) buf = std::make_unique<ScratchBuffer>();
  if (buf->bytes < bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::free(buf->data);
    buf->data = p;
    buf->bytes = rounded;
  }
  return buf->data;
}

void execute(const char* op, const CachedPrimitive& prim, std::initializer_list<ExecArg> data) {
  dnnl::stream& stream = onednn_stream();
  try {
    ExecMemories& mem = exec_memories(prim);
    constexpr size_t kMaxArgs = 16;
    GANTRY_CHECK(prim.args.size() < kMaxArgs, op, ": internal error, too many oneDNN arguments");
    dnnl_exec_arg_t args[kMaxArgs];
    bool unreorder[kMaxArgs] = {};  // outputs to reorder back to the caller's layout
    int nargs = 0;
    int slot = 1;
    for (size_t i = 0; i < prim.args.size(); ++i) {
      const PrimitiveArg& arg = prim.args[i];
      const ExecArg* given = nullptr;
      for (const ExecArg& d : data) {
        if (d.id == arg.id) given = &d;
      }
      GANTRY_CHECK(given != nullptr, op, ": internal error, no data for oneDNN argument ", arg.id);
      void* ptr = const_cast<void*>(given->data);
      Layout layout = given->layout;
      GANTRY_CHECK(layout == Layout::Plain || arg.output || arg.may_block(), op,
                   ": internal error, oneDNN input ", arg.id, " cannot be blocked");
      if (arg.output) layout = prim.output_layout(arg.id, layout);  // what it writes
      // No reorder either way (Note [blocked activations], Note [bf16 activations]).
      dnnl::memory* direct = layout == Layout::ChannelBlocked && arg.wants_blocked()             ? &mem.blocked[i]
                             : layout == Layout::ChannelBlockedBf16 && arg.wants_blocked_bf16() ? &mem.blocked_bf16[i]
                                                                                                 : nullptr;
      if (direct != nullptr) {
        direct->set_data_handle(ptr);
        args[nargs++] = {arg.id, direct->get()};
        continue;
      }
      const dnnl::reorder& in_reorder = layout == Layout::ChannelBlocked       ? arg.blocked_reorder
                                        : layout == Layout::ChannelBlockedBf16 ? arg.blocked_bf16_reorder
                                                                               : arg.reorder;
      dnnl::memory& from = layout == Layout::ChannelBlocked       ? mem.blocked[i]
                           : layout == Layout::ChannelBlockedBf16 ? mem.blocked_bf16[i]
                                                                  : mem.user[i];
      from.set_data_handle(ptr);
      if (!in_reorder && !(arg.output && arg.reorder)) {
        args[nargs++] = {arg.id, from.get()};
        continue;
      }
      mem.wanted[i].set_data_handle(thread_scratch(slot++, arg.wanted.get_size()));
      if (arg.output) {
        unreorder[i] = true;
      } else {
        run_reorder(in_reorder, from, mem.wanted[i], stream, arg.small);
      }
      args[nargs++] = {arg.id, mem.wanted[i].get()};
    }
    if (size_t bytes = prim.scratchpad.get_size(); bytes > 0) {
      mem.scratchpad.set_data_handle(thread_scratch(0, bytes));
      args[nargs++] = {DNNL_ARG_SCRATCHPAD, mem.scratchpad.get()};
    }
    apply_thread_budget();  // also after a small reorder's one thread (Note [small oneDNN calls])
    check(dnnl_primitive_execute(prim.primitive.get(), stream.get(), nargs, args),
          "could not execute a primitive");
    // Outputs the primitive wrote in its own layout go back to the caller's.
    for (size_t i = 0; i < prim.args.size(); ++i) {
      if (unreorder[i])
        run_reorder(prim.args[i].reorder, mem.wanted[i], mem.user[i], stream, prim.args[i].small);
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    GANTRY_FAIL(op, ": oneDNN execution failed: ", e.what());
  }
}

void set_conv_layout(ConvLayout layout) { g_conv_layout = layout; }
ConvLayout conv_layout() { return g_conv_layout.load(); }

namespace {

// Copies a whole activation of `shape` from plain f32 NCHW into the blocked layout (f32, or bf16)
// or back, through a cached reorder.
void convert_activation(const Shape& shape, bool bf16, bool to_blocked, const void* from, void* to) {
  const char* op = to_blocked ? "plain_to_blocked" : "blocked_to_plain";
  PrimitiveKey key(op);
  key.add(shape).add(bf16);
  auto prim = cached_primitive(key, [&] {
    const memory::dims dims = onednn_dims(shape);
    const memory::desc blocked =
        channel_blocked_desc(dims, bf16 ? memory::data_type::bf16 : memory::data_type::f32);
    const memory::desc plain = plain_desc(dims);
    const memory::desc& src = to_blocked ? plain : blocked;
    const memory::desc& dst = to_blocked ? blocked : plain;
    CachedPrimitive c;
    c.primitive = dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), src, onednn_engine(), dst));
    c.add_arg(DNNL_ARG_FROM, false, src, src);
    c.add_arg(DNNL_ARG_TO, true, dst, dst);
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

}  // namespace

View plain_view(const View& v, int slot) {
  if (v.layout == Layout::Plain) return v;
  View out{thread_scratch(kFreeScratchSlot + slot, v.numel() * sizeof(float)), v.shape, v.dtype,
           v.device};
  convert_activation(v.shape, v.layout == Layout::ChannelBlockedBf16, false, v.data, out.data);
  return out;
}

void write_blocked(const View& plain, void* dst, Layout layout) {
  GANTRY_CHECK(layout != Layout::Plain && blockable(plain.shape), "write_blocked: internal error, ",
               plain.shape.str(), " cannot be written blocked");
  convert_activation(plain.shape, layout == Layout::ChannelBlockedBf16, true, plain.data, dst);
}

bool blockable(const Shape& shape) { return shape.rank() == 4 && shape[1] % channel_block() == 0; }

}  // namespace gantry::cpu
