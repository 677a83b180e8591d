#include "backend/cpu/onednn_context.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/threads.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;

std::atomic<ConvLayout> g_conv_layout{ConvLayout::Auto};

struct ScratchBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data); }
};

struct PrimitiveCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CachedPrimitive>> entries;
};

PrimitiveCache& cache() {
  static PrimitiveCache c;
  return c;
}

}  // namespace

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
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

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

void CachedPrimitive::add_arg(int id, bool output, const memory::desc& user,
                              const memory::desc& wanted) {
  PrimitiveArg arg{id, output, user, wanted, {}};
  if (user != wanted) {
    const dnnl::engine& eng = onednn_engine();
    arg.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, wanted, eng, user))
                         : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, wanted));
  }
  args.push_back(std::move(arg));
}

PrimitiveKey::PrimitiveKey(const char* op) : op_(op), text_(op) {
  text_.reserve(96);
  add(num_threads());
}

PrimitiveKey& PrimitiveKey::add(int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  text_.push_back(',');
  text_.append(buf, res.ptr);
  return *this;
}

PrimitiveKey& PrimitiveKey::add(const Shape& s) {
  text_.push_back(',');
  text_.push_back('(');
  for (int64_t d : s) add(d);
  text_.push_back(')');
  return *this;
}

std::shared_ptr<const CachedPrimitive> cached_primitive(
    const PrimitiveKey& key, const std::function<CachedPrimitive()>& make) {
  PrimitiveCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key.str());
    if (it != c.entries.end()) return it->second;
  }
  // Create outside the lock (JIT compilation is slow); if another thread won the race, keep
  // its primitive so every thread shares one.
  std::shared_ptr<const CachedPrimitive> made;
  apply_thread_budget();
  try {
    made = std::make_shared<const CachedPrimitive>(make());
  } catch (const dnnl::error& e) {
    GANTRY_FAIL(key.op(), ": oneDNN could not create a primitive for [", key.str(),
                "]: ", e.what());
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  auto [it, inserted] = c.entries.emplace(key.str(), std::move(made));
  return it->second;
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

void execute(const char* op, const CachedPrimitive& prim,
             std::initializer_list<std::pair<int, const void*>> data) {
  apply_thread_budget();
  const dnnl::engine& eng = onednn_engine();
  dnnl::stream& stream = onednn_stream();
  try {
    std::unordered_map<int, dnnl::memory> args;
    args.reserve(prim.args.size() + 1);
    // Outputs that need converting back once the primitive ran: (primitive's, caller's).
    std::vector<std::pair<const PrimitiveArg*, std::pair<dnnl::memory, dnnl::memory>>> outputs;
    int slot = 1;
    for (const PrimitiveArg& arg : prim.args) {
      const void* ptr = nullptr;
      bool found = false;
      for (const auto& [id, p] : data) {
        if (id == arg.id) {
          ptr = p;
          found = true;
          break;
        }
      }
      GANTRY_CHECK(found, op, ": internal error, no data for oneDNN argument ", arg.id);
      dnnl::memory user(arg.user, eng, const_cast<void*>(ptr));
      if (!arg.reorder) {
        args.emplace(arg.id, user);
        continue;
      }
      dnnl::memory wanted(arg.wanted, eng, thread_scratch(slot++, arg.wanted.get_size()));
      if (arg.output) {
        outputs.push_back({&arg, {wanted, user}});
      } else {
        arg.reorder.execute(stream, user, wanted);
      }
      args.emplace(arg.id, wanted);
    }
    if (size_t bytes = prim.scratchpad.get_size(); bytes > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(prim.scratchpad, eng, thread_scratch(0, bytes)));
    }
    prim.primitive.execute(stream, args);
    for (auto& [arg, mems] : outputs) arg->reorder.execute(stream, mems.first, mems.second);
    stream.wait();
  } catch (const dnnl::error& e) {
    GANTRY_FAIL(op, ": oneDNN execution failed: ", e.what());
  }
}

void set_conv_layout(ConvLayout layout) { g_conv_layout = layout; }
ConvLayout conv_layout() { return g_conv_layout.load(); }

}  // namespace gantry::cpu
