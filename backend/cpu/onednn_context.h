// oneDNN plumbing shared by the dense CPU ops (onednn_*.cpp): one CPU engine per process, one
// stream per thread, per-thread scratch memory and a process-wide cache of primitives.
//
// Note [oneDNN primitive cache]: a primitive is created once per (op, shapes, params, thread
// budget) and then executed concurrently from any thread. The thread budget is part of the key
// because oneDNN's OpenMP kernels fix their work split when the primitive is created. Reorder
// targets and scratchpads live in per-thread buffers, so a cached primitive holds no mutable
// state and needs no lock while it runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/view.h"
#include "base/shape.h"

namespace gantry::cpu {

dnnl::engine& onednn_engine();
// The ISA oneDNN's JIT runs (within Note [CPU ISA limit]); the only place oneDNN is asked.
dnnl::cpu_isa onednn_cpu_isa();
dnnl::stream& onednn_stream();  // this thread's

// Attributes every cached primitive is created with (user-managed scratchpad).
dnnl::primitive_attr onednn_attr();

dnnl::memory::dims onednn_dims(const Shape& shape);
// Dense row-major descriptor of `dims` (nchw / oihw / nc / x).
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims,
                              dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// Note [channel block]: oneDNN 2.6's direct JIT convolutions and pools run on channels blocked by
// the vector width of the ISA they were generated for: 8 floats (nChw8c) with SSE4.1 / AVX /
// AVX2, 16 (nChw16c) with AVX-512. channel_block() is that width for the ISA oneDNN runs here
// (its effective ISA, so ONEDNN_MAX_CPU_ISA counts), decided once per process, and the only
// place the block size of Layout::ChannelBlocked comes from: the blocked activations (Note
// [blocked activations] in core/storage.h), the blocked batch norm loops and the descriptors
// below all follow it, so a conv -> conv chain needs no reorder on either ISA.
int channel_block();
// Forces channel_block() to 8 or 16 (0: back to the ISA's) for the tests of the blocked loops
// at the block size this CPU does not use; primitives are cached per block size.
void set_channel_block_for_testing(int block);
// The channel-blocked layout (aBcd8b / aBcd16b by channel_block()) for 4-D f32 dims: the layout
// of a blocked activation, and what a primitive without format_tag::any is given to avoid the
// slow plain-NCHW kernels (Note [blocked pooling] in onednn_pooling.cpp).
dnnl::memory::desc channel_blocked_desc(const dnnl::memory::dims& dims,
                                        dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
// Descriptor letting the primitive choose its (blocked) layout.
dnnl::memory::desc any_desc(const dnnl::memory::dims& dims);  // f32
dnnl::memory::desc any_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type dt);
// Whether oneDNN runs bf16 natively on this CPU (avx512_bf16 or AMX); otherwise it would fall
// back to reference kernels.
bool onednn_has_native_bf16();

// One argument of a cached primitive: the layout the caller holds and the one the primitive
// wants. When they differ, `reorder` converts user -> wanted (inputs) or wanted -> user
// (outputs) through a per-thread scratch buffer.
//
// An activation argument may also be held (inputs) or accepted (outputs) in ChannelBlocked or
// ChannelBlockedBf16 (Note [blocked activations], Note [bf16 activations] in core/storage.h):
// then `blocked` / `blocked_bf16` describe those layouts, and their reorders convert such an
// input to `wanted` when the two differ.
struct PrimitiveArg {
  int id = 0;  // DNNL_ARG_*
  bool output = false;
  dnnl::memory::desc user;
  dnnl::memory::desc wanted;
  dnnl::reorder reorder;  // empty when user == wanted
  dnnl::memory::desc blocked;  // zero-sized unless the argument may be blocked
  dnnl::reorder blocked_reorder;  // inputs: blocked -> wanted, empty when equal
  dnnl::memory::desc blocked_bf16;  // zero-sized unless the argument may be blocked
  dnnl::reorder blocked_bf16_reorder;  // inputs: blocked bf16 -> wanted, empty when equal
  bool small = false;  // its reorders run on one thread (Note [small oneDNN calls])
  bool may_block() const { return blocked.get_size() > 0; }
  bool wants_blocked() const { return may_block() && wanted == blocked; }
  bool wants_blocked_bf16() const { return may_block() && wanted == blocked_bf16; }
};

struct CachedPrimitive {
  dnnl::primitive primitive;
  std::vector<PrimitiveArg> args;
  dnnl::memory::desc scratchpad;
  dnnl::memory::desc workspace;  // max pooling only

  // Registers an argument; adds the reorder when the layouts differ. An `activation` argument
  // (f32, NCHW) may be passed or written in ChannelBlocked or ChannelBlockedBf16 when blockable.
  void add_arg(int id, bool output, const dnnl::memory::desc& user,
               const dnnl::memory::desc& wanted, bool activation = false);
  // The layout execute() writes output `id` in when the caller accepts `accepted`.
  Layout output_layout(int id, Layout accepted) const;
};

// Cache key: the op name, then any integers and shapes; the thread budget and the channel block
// are appended by the constructor (Note [oneDNN primitive cache], Note [channel block]). The
// text lives in the object (no heap), since a key is built for every dense op call.
class PrimitiveKey {
 public:
  explicit PrimitiveKey(const char* op);
  PrimitiveKey& add(int64_t v);
  PrimitiveKey& add(const Shape& s);
  const char* op() const { return op_; }
  std::string_view str() const { return {text_, size_}; }

 private:
  void append(std::string_view s);

  static constexpr size_t kCapacity = 480;
  const char* op_;
  char text_[kCapacity];
  size_t size_ = 0;
};

// The cached primitive for `key` or null (no allocation on a hit).
std::shared_ptr<const CachedPrimitive> find_cached_primitive(const PrimitiveKey& key);
// Creates the primitive with `make` and caches it (or returns the one another thread cached
// first). oneDNN errors raised by `make` become gantry::Error naming the op and the key.
std::shared_ptr<const CachedPrimitive> create_cached_primitive(
    const PrimitiveKey& key, const std::function<CachedPrimitive()>& make);

// The cached primitive for `key`, creating it with `make` on a miss. A template, so a hit does
// not wrap `make` in a std::function (which would allocate for a capturing lambda).
template <typename Make>
std::shared_ptr<const CachedPrimitive> cached_primitive(const PrimitiveKey& key, Make&& make) {
  if (auto hit = find_cached_primitive(key)) return hit;
  return create_cached_primitive(key, std::function<CachedPrimitive()>(std::forward<Make>(make)));
}
size_t primitive_cache_size();

// One argument's data for execute(): for an input the layout it is in, for an output the most
// compact layout the caller accepts (backend/view.h).
struct ExecArg {
  int id = 0;  // DNNL_ARG_*
  const void* data = nullptr;
  Layout layout = Layout::Plain;
};

// Note [small oneDNN calls]: with 2 threads under the passive OpenMP wait policy, waking the
// second thread costs ~50 us, more than a small reorder or matmul takes on one: StyleGAN2-32's
// ~450 reorders and ~80 matmuls per bf16 step took 29 + 4 ms on 2 threads against 10 + 0.5 ms on
// one (ONEDNN_VERBOSE). So argument reorders of less than kSmallReorderBytes, and matmuls of
// less than kSmallMatmulMacs multiply-adds, run on one thread; both are exact or fixed-order per
// output, so the results do not change.
constexpr size_t kSmallReorderBytes = size_t{1} << 20;
constexpr int64_t kSmallMatmulMacs = int64_t{1} << 20;

// Executes `prim` on this thread's stream with the caller's data for every registered argument,
// reordering through scratch where the layouts differ, and waits. The dnnl::memory objects are
// made once per (thread, primitive) and re-pointed on every call, and oneDNN is called through
// its C API with argument arrays on the stack, so the only heap traffic left in a call is
// oneDNN's own (Note [counting allocations] in bench/allocation_counter.cpp).
void execute(const char* op, const CachedPrimitive& prim, std::initializer_list<ExecArg> data);

// Grow-only, 64-byte aligned per-thread buffer; `slot` tells concurrent users apart. execute()
// uses the slots below kFreeScratchSlot; ops may use the ones from it for their own temporaries.
void* thread_scratch(int slot, size_t bytes);
constexpr int kFreeScratchSlot = 16;
// `v` in plain f32 NCHW: itself, or a blocked activation (f32 or bf16) reordered into this
// thread's scratch slot kFreeScratchSlot + `slot` (Note [blocked activations], Note [bf16
// activations] in core/storage.h), valid until that slot is used again.
View plain_view(const View& v, int slot);
// The inverse: plain f32 NCHW `plain` written to `dst` in `layout` (ChannelBlocked, or
// ChannelBlockedBf16); its channels must fill whole blocks.
void write_blocked(const View& plain, void* dst, Layout layout);
// Whether an activation of this shape can be held in ChannelBlocked (4-D, whole channel blocks).
bool blockable(const Shape& shape);

// Layout policy for convolution primitives (Note [conv layout] in onednn_conv.cpp). Plain runs
// on the caller's NCHW/OIHW data; Blocked lets oneDNN choose (format_tag::any) and reorders in
// and out on every call; Auto (the default) picks per primitive what measured fastest.
enum class ConvLayout : uint8_t { Auto, Plain, Blocked };
void set_conv_layout(ConvLayout layout);  // process-wide; for benchmarks and tests
ConvLayout conv_layout();

}  // namespace gantry::cpu
