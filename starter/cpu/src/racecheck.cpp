// The race checker: what `cudacpu.py compile --racecheck` builds kernels for.
//
// That build uses the compiler's ThreadSanitizer instrumentation, which turns
// every memory access into a call (__tsan_read4(addr), ...), but links these
// functions instead of ThreadSanitizer's runtime. They check the accesses of
// CUDA threads to device and shared memory the way CUDA orders them:
//   - threads of one block are ordered only by __syncthreads() (and, within
//     a warp, by warp collectives such as __syncwarp and shuffles);
//   - threads of different blocks are not ordered at all within a launch;
//   - atomic operations never race.
// Two accesses to the same word by unordered threads, at least one a write,
// are a data race: the launch stops with a report naming both threads and
// both lines. This is what catches a missing __syncthreads() whose result
// happens to be right, or blocks adding into one variable with a plain `+=`.
//
// Slow (every access is a call and a table lookup): for small cases, like
// compute-sanitizer's racecheck on a GPU.
#include "racecheck.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include "block_runner.h"
#include "diagnostics.h"
#include "memory.h"
#include "profile.h"

namespace cudacpu {

namespace {

std::atomic<bool> g_enabled{false};

// One access of a CUDA thread: who, and when in CUDA's order.
struct Access {
    std::uint64_t block = 0;    // linear block index
    std::uint32_t thread = 0;   // linear thread index within the block, + 1 (0: no access)
    std::uint32_t epoch = 0;    // barriers the block had passed
    std::uint32_t warp_gen = 0; // collectives the thread's warp had completed
    const void* pc = nullptr;

    bool empty() const { return thread == 0; }
    bool same_thread(const Access& o) const { return block == o.block && thread == o.thread; }
    // Whether CUDA orders the two accesses: same block, and a barrier (or,
    // in one warp, a warp collective) between them.
    bool ordered_with(const Access& o) const {
        if (block != o.block) return false;
        if (epoch != o.epoch) return true;
        const bool same_warp = (thread - 1) / 32 == (o.thread - 1) / 32;
        return same_warp && warp_gen != o.warp_gen;
    }
};

struct Word {
    Access write, read, other_read;  // the last write, and the last two distinct readers since
};

constexpr int kShards = 64;

// Per launch: the words accessed so far.
struct Shadow {
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device;  // sorted ranges
    std::array<std::mutex, kShards> locks;
    std::array<std::unordered_map<std::uintptr_t, Word>, kShards> words;
};

std::mutex g_shadow_mutex;
const LaunchState* g_launch = nullptr;
Shadow* g_shadow = nullptr;

bool in_device_memory(const Shadow& s, std::uintptr_t a) {
    auto it = std::upper_bound(s.device.begin(), s.device.end(), std::make_pair(a, UINTPTR_MAX));
    return it != s.device.begin() && a < std::prev(it)->second;
}

std::string thread_text(const Access& a, dim3 grid, dim3 block) {
    const std::uint64_t t = a.thread - 1;
    const uint3 ti{static_cast<unsigned>(t % block.x), static_cast<unsigned>((t / block.x) % block.y),
                   static_cast<unsigned>(t / (std::uint64_t(block.x) * block.y))};
    const uint3 bi{static_cast<unsigned>(a.block % grid.x), static_cast<unsigned>((a.block / grid.x) % grid.y),
                   static_cast<unsigned>(a.block / (std::uint64_t(grid.x) * grid.y))};
    return "thread " + coords(ti) + " of block " + coords(bi);
}

[[gnu::cold]] void report(BlockRunner* r, std::uintptr_t address, bool shared, const Access& now, bool now_writes,
                          const Access& before, bool before_wrote) {
    const LaunchState& launch = *r->launch();
    std::string what = shared ? r->arena().describe_access(reinterpret_cast<const void*>(address), 4)
                              : describe_device_address(reinterpret_cast<const void*>(address));
    // Keep only the element's name ("tile[3][4]", "result[0]").
    const auto cut = what.find_first_of(" ,");
    if (cut != std::string::npos) what.erase(cut);
    if (what.empty()) what = "a word of " + std::string(shared ? "shared" : "device") + " memory";
    const auto place = [](const Access& a) {
        const std::string at = symbolize(a.pc, false);
        return at.empty() ? std::string() : " at " + at;
    };
    const std::string message =
        launch.describe() + ": data race on " + what + " (" + (shared ? "shared" : "global") + " memory): " +
        thread_text(now, launch.grid, launch.block) + (now_writes ? " wrote it" : " read it") + place(now) + ", and " +
        thread_text(before, launch.grid, launch.block) + (before_wrote ? " wrote it" : " read it") + place(before) +
        ", with nothing ordering the two. " +
        (now.block == before.block
             ? "Threads of a block need a __syncthreads() between writing and reading a value."
             : "Blocks run in no fixed order, and on a GPU at the same time: where several blocks update one "
               "location, use atomicAdd (or another atomic operation), not a plain += or =.");
    r->fail_soon(cudaErrorLaunchFailure, message);
}

// Every access of a kernel built with --racecheck: counted in a profiled launch, else checked for races
// (atomic read-modify-writes never race).
void access(const volatile void* addr, std::size_t size, AccessOp op, const void* pc) {
    BlockRunner* r = current_runner();
    if (!r || !r->in_thread() || (op == AccessOp::kAtomic && !r->recorder())) return;
    Shadow* s = g_shadow;
    if (!s || r->launch() != g_launch || r->launch()->failed.load(std::memory_order_relaxed)) return;
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const bool shared = r->arena().contains(const_cast<const void*>(addr));
    if (!shared && !in_device_memory(*s, a)) return;  // locals, thread-local variables, host memory
    const int t = r->running_index();
    if (WarpRecorder* recorder = r->recorder()) {
        // Shared memory as an offset into the block's: banks depend on the offset only.
        const std::uintptr_t at = shared ? a - reinterpret_cast<std::uintptr_t>(r->arena().dynamic_base()) : a;
        return profile_record(recorder, t, pc, at, size, op, shared);
    }
    const bool write = op == AccessOp::kStore;
    Access now{r->block_linear(), static_cast<std::uint32_t>(t + 1), r->barrier_epoch(), r->warp_generation(t / 32), pc};
    for (std::uintptr_t w = a & ~std::uintptr_t(3); w < a + size; w += 4) {
        // Shared memory is per block: its words start afresh with each block.
        const std::uintptr_t key = shared ? (w ^ (r->block_linear() << 48)) : w;
        const int shard = static_cast<int>((w >> 2) % kShards);
        std::lock_guard<std::mutex> lock(s->locks[shard]);
        Word& word = s->words[shard][key];
        if (!word.write.empty() && !word.write.same_thread(now) && !now.ordered_with(word.write))
            return report(r, w, shared, now, write, word.write, true);
        if (write) {
            for (const Access* reader : {&word.read, &word.other_read})
                if (!reader->empty() && !reader->same_thread(now) && !now.ordered_with(*reader))
                    return report(r, w, shared, now, true, *reader, false);
            word.write = now;
            word.read = word.other_read = Access{};
        } else if (word.read.empty() || word.read.same_thread(now)) {
            word.read = now;
        } else {
            word.other_read = word.read;
            word.read = now;
        }
    }
}

}  // namespace

bool racecheck_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void racecheck_begin(const LaunchState& launch) {
    auto* s = new Shadow();
    s->device = device_ranges();
    std::lock_guard<std::mutex> lock(g_shadow_mutex);
    g_launch = &launch;
    g_shadow = s;
}

void racecheck_end() {
    Shadow* s;
    {
        std::lock_guard<std::mutex> lock(g_shadow_mutex);
        s = g_shadow;
        g_shadow = nullptr;
        g_launch = nullptr;
    }
    delete s;
}

}  // namespace cudacpu

// --- The instrumentation's entry points ---------------------------------------------------
namespace {
constexpr cudacpu::AccessOp kLoad = cudacpu::AccessOp::kLoad, kStore = cudacpu::AccessOp::kStore,
                          kAtomic = cudacpu::AccessOp::kAtomic;
}  // namespace
#define CUDACPU_PC __builtin_return_address(0)
#define CUDACPU_PLAIN(n)                                                                                             \
    void __tsan_read##n(void* a) { cudacpu::access(a, n, kLoad, CUDACPU_PC); }                                       \
    void __tsan_write##n(void* a) { cudacpu::access(a, n, kStore, CUDACPU_PC); }                                     \
    void __tsan_unaligned_read##n(void* a) { cudacpu::access(a, n, kLoad, CUDACPU_PC); }                             \
    void __tsan_unaligned_write##n(void* a) { cudacpu::access(a, n, kStore, CUDACPU_PC); }                           \
    void __tsan_volatile_read##n(void* a) { cudacpu::access(a, n, kLoad, CUDACPU_PC); }                              \
    void __tsan_volatile_write##n(void* a) { cudacpu::access(a, n, kStore, CUDACPU_PC); }                            \
    void __tsan_read##n##_pc(void* a, void* pc) { cudacpu::access(a, n, kLoad, pc); }                                \
    void __tsan_write##n##_pc(void* a, void* pc) { cudacpu::access(a, n, kStore, pc); }

// Atomics are real atomic operations and never take part in a race. A
// profiled launch counts the read-modify-writes. The runtime's own
// compare-and-swap loops (atomics.h: a float atomicAdd, ...) are one
// instruction on a GPU: their weak exchange counts once, when it succeeds,
// and their first read not at all; a student's atomicCAS is a strong one.
#define CUDACPU_RMW(a) cudacpu::access(a, sizeof(*(a)), kAtomic, CUDACPU_PC)
#define CUDACPU_ATOMIC(n, T)                                                                                         \
    T __tsan_atomic##n##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }             \
    void __tsan_atomic##n##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); }             \
    T __tsan_atomic##n##_exchange(volatile T* a, T v, int) {                                                         \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                        \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_add(volatile T* a, T v, int) {                                                        \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                         \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_sub(volatile T* a, T v, int) {                                                        \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                         \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_and(volatile T* a, T v, int) {                                                        \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                         \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_or(volatile T* a, T v, int) {                                                         \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                          \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_xor(volatile T* a, T v, int) {                                                        \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                         \
    }                                                                                                              \
    T __tsan_atomic##n##_fetch_nand(volatile T* a, T v, int) {                                                       \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                        \
    }                                                                                                              \
    int __tsan_atomic##n##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {                             \
        CUDACPU_RMW(a);                                                                                            \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                     \
    }                                                                                                              \
    int __tsan_atomic##n##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {                               \
        const int done = __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);            \
        if (done) CUDACPU_RMW(a);                                                                                  \
        return done;                                                                                               \
    }                                                                                                              \
    T __tsan_atomic##n##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                                   \
        CUDACPU_RMW(a);                                                                                            \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                           \
        return c;                                                                                                  \
    }

extern "C" {
void __tsan_init() { cudacpu::g_enabled.store(true); }
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_ignore_thread_begin() {}
void __tsan_ignore_thread_end() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_read_range(void* a, unsigned long size) { cudacpu::access(a, size, kLoad, CUDACPU_PC); }
void __tsan_write_range(void* a, unsigned long size) { cudacpu::access(a, size, kStore, CUDACPU_PC); }
void* __tsan_memcpy(void* d, const void* s, unsigned long n) {
    cudacpu::access(s, n, kLoad, CUDACPU_PC);
    cudacpu::access(d, n, kStore, CUDACPU_PC);
    return __builtin_memcpy(d, s, n);
}
void* __tsan_memmove(void* d, const void* s, unsigned long n) {
    cudacpu::access(s, n, kLoad, CUDACPU_PC);
    cudacpu::access(d, n, kStore, CUDACPU_PC);
    return __builtin_memmove(d, s, n);
}
void* __tsan_memset(void* d, int c, unsigned long n) {
    cudacpu::access(d, n, kStore, CUDACPU_PC);
    return __builtin_memset(d, c, n);
}
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
CUDACPU_PLAIN(1)
CUDACPU_PLAIN(2)
CUDACPU_PLAIN(4)
CUDACPU_PLAIN(8)
CUDACPU_PLAIN(16)
CUDACPU_ATOMIC(8, char)
CUDACPU_ATOMIC(16, short)
CUDACPU_ATOMIC(32, int)
CUDACPU_ATOMIC(64, long)
}
