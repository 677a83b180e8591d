// Note [pooled objects] (pool_allocator.h). Size classes are multiples of 16 bytes. A thread
// takes blocks from its cache; an empty cache refills a batch from the global list (or carves a
// new chunk); a cache grown past two batches (a thread freeing what others made) gives one back.
#include "core/pool_allocator.h"

#include <mutex>
#include <new>

namespace gantry::detail {

namespace {

constexpr size_t kGranule = 16;
constexpr size_t kClasses = kPoolMaxBytes / kGranule;
constexpr size_t kBatch = 64;  // blocks moved between a thread cache and the global list

struct FreeBlock {
  FreeBlock* next;
};

struct FreeList {
  FreeBlock* head = nullptr;
  size_t count = 0;
  void push(FreeBlock* b) {
    b->next = head;
    head = b;
    ++count;
  }
  FreeBlock* pop() {
    FreeBlock* b = head;
    head = b->next;
    --count;
    return b;
  }
};

struct GlobalPool {
  std::mutex mutex;
  FreeList lists[kClasses];
};

// Leaked on purpose: thread caches flush into it at thread exit, after static destructors
// may have run.
GlobalPool& global_pool() {
  static GlobalPool* pool = new GlobalPool;
  return *pool;
}

// Trivially destructible, so it stays usable after its thread's flusher ran (objects freed by
// later thread_local destructors then go straight to the global list).
struct ThreadCache {
  FreeList lists[kClasses];
  bool flusher_registered = false;
  bool exiting = false;
};
thread_local ThreadCache t_cache;

void move_blocks(FreeList& from, FreeList& to, size_t n) {
  for (size_t i = 0; i < n && from.head; ++i) to.push(from.pop());
}

struct Flusher {
  ~Flusher() {
    GlobalPool& g = global_pool();
    std::lock_guard<std::mutex> lock(g.mutex);
    for (size_t c = 0; c < kClasses; ++c) move_blocks(t_cache.lists[c], g.lists[c], SIZE_MAX);
    t_cache.exiting = true;
  }
};

void register_flusher() {
  thread_local Flusher flusher;
  (void)flusher;
  t_cache.flusher_registered = true;
}

size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }

}  // namespace

void* pool_allocate(size_t bytes) {
  if (bytes == 0 || bytes > kPoolMaxBytes) return ::operator new(bytes == 0 ? 1 : bytes);
  const size_t c = class_of(bytes);
  FreeList& mine = t_cache.lists[c];
  if (mine.head) return mine.pop();
  GlobalPool& g = global_pool();
  if (t_cache.exiting) {  // the cache was flushed: serve from the global list only
    std::lock_guard<std::mutex> lock(g.mutex);
    if (g.lists[c].head) return g.lists[c].pop();
    return ::operator new((c + 1) * kGranule);
  }
  if (!t_cache.flusher_registered) register_flusher();
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    move_blocks(g.lists[c], mine, kBatch);
  }
  if (!mine.head) {  // carve a new chunk of kBatch blocks
    const size_t block = (c + 1) * kGranule;
    char* chunk = static_cast<char*>(::operator new(block * kBatch));
    for (size_t i = 0; i < kBatch; ++i) mine.push(reinterpret_cast<FreeBlock*>(chunk + i * block));
  }
  return mine.pop();
}

void pool_deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes == 0 || bytes > kPoolMaxBytes) {
    ::operator delete(p);
    return;
  }
  const size_t c = class_of(bytes);
  GlobalPool& g = global_pool();
  if (t_cache.exiting) {
    std::lock_guard<std::mutex> lock(g.mutex);
    g.lists[c].push(static_cast<FreeBlock*>(p));
    return;
  }
  if (!t_cache.flusher_registered) register_flusher();
  FreeList& mine = t_cache.lists[c];
  mine.push(static_cast<FreeBlock*>(p));
  if (mine.count > 2 * kBatch) {
    std::lock_guard<std::mutex> lock(g.mutex);
    move_blocks(mine, g.lists[c], kBatch);
  }
}

}  // namespace gantry::detail
