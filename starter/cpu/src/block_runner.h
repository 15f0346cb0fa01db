// Runs one block at a time on one worker thread: every CUDA thread of the
// block is a fiber, and they take turns, switching only where CUDA threads
// wait for each other (__syncthreads and the warp collectives).
//
// Between those points a CUDA thread runs alone, in the order the schedule
// gives (thread 0, 1, 2, ... by default). A thread that returns gives its
// stack back at once, so a kernel without barriers runs all its threads on
// one stack, one after the other.
//
// The runner is also where misuse of barriers is caught: a thread that
// returns while others wait at __syncthreads(), threads waiting at different
// __syncthreads(), a warp collective whose mask names a lane that returned or
// does something else. Each ends the launch with a message that names the
// threads and the file:line of each.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "fiber.h"
#include "launch_state.h"
#include "profile.h"
#include "shared_arena.h"

namespace cudacpu {

class BlockRunner {
public:
    BlockRunner();
    BlockRunner(const BlockRunner&) = delete;
    BlockRunner& operator=(const BlockRunner&) = delete;

    // Runs blocks of `launch` taken from its shared counter until none is
    // left or the launch has failed.
    void run_blocks(LaunchState& launch);

    // --- Called by the running CUDA thread (from the detail:: functions) ---
    int barrier(detail::BarrierKind kind, int predicate, Site site);
    detail::WarpResult warp_op(detail::WarpOpKind op, unsigned mask, unsigned long long value, int arg, int width,
                               Site site);
    void* shared_alloc(const void* key, const detail::SharedVarInfo& info);
    void note_dynamic_shared(const char* name, Site site, std::size_t element_bytes);
    // Ends the block with `error` and `message`; the calling CUDA thread never resumes.
    [[noreturn, gnu::cold, gnu::noinline]] void fail_from_thread(cudaError_t error, const std::string& message);

    // --- For diagnostics, the race checker and the signal handlers ---
    bool in_thread() const { return running_ >= 0; }
    int running_index() const { return running_; }
    std::uint64_t block_linear() const { return block_linear_; }
    // Barriers the running block has passed, and collectives its warp `w` has completed.
    std::uint32_t barrier_epoch() const { return barrier_epoch_; }
    std::uint32_t warp_generation(int w) const { return warps_[w].generation; }
    std::string thread_name(int t) const;
    // "thread (1,0,0) of block (2,0,0)" for the running CUDA thread.
    std::string running_thread() const;
    const LaunchState* launch() const { return launch_; }
    const SharedArena& arena() const { return arena_; }
    // Where the running launch's accesses are counted, when it is profiled (profile.h).
    WarpRecorder* recorder() const { return recorder_; }
    bool is_stack_guard(const void* addr) const { return stacks_.is_guard_page(addr); }
    std::size_t stack_bytes() const { return stacks_.stack_bytes(); }
    // Whether `sp` lies on the running CUDA thread's stack.
    bool on_thread_stack(const void* sp) const;
    // From a signal handler that interrupted the running CUDA thread: leave
    // it for good and go back to the scheduler, which reports the fault at
    // `address` (a memory fault) or the timeout, with the code address `pc`.
    // Allocates nothing: it runs inside the handler.
    [[noreturn]] void abandon_from_signal(int signal, const void* address, const void* pc);
    // From an AddressSanitizer report in the running CUDA thread: the block
    // stops at the thread's next barrier or return.
    void fail_soon(cudaError_t error, const std::string& message);

private:
    enum class State : unsigned char { kNotStarted, kQueued, kRunning, kAtBarrier, kAtWarp, kAtActiveMask, kDone };

    // One CUDA thread. What every barrier touches comes first, in one cache
    // line: a block's 1024 threads already strain the caches at every switch.
    struct alignas(64) CudaThread {
        Context context;
        State state = State::kNotStarted;
        bool has_stack = false;
        int barrier_result = 0;
        uint3 index{0, 0, 0};
        Site wait_site{nullptr, 0};  // where it waits (barrier or warp op)
        // Colder: the stack, where it returned, and the warp collective it waits in.
        Stack stack;
        Site exit_site{nullptr, 0};
        detail::WarpOpKind op = detail::kSyncWarp;
        unsigned mask = 0;
        unsigned long long in = 0;
        int arg = 0, width = 32;
        unsigned long long out = 0;
        int out_predicate = 0;
    };

    struct Warp {
        unsigned exists = 0;     // lanes the block has (the last warp may be partial)
        unsigned waiting = 0;    // lanes waiting in a warp collective
        unsigned exited = 0;     // lanes that returned
        unsigned activemask = 0; // lanes waiting in __activemask()
        std::uint32_t generation = 0;  // collectives completed (orders its lanes for the race checker)
    };

    static void fiber_main(void* self);
    void prepare(LaunchState& launch);
    void run_block(std::uint64_t block);
    // The next queued CUDA thread to run, or -1 when none is (or the block failed).
    int next_runnable();
    // Gives the CPU from the running context (saved in `from`) to thread `to`
    // or to the scheduler; returns when something switches back.
    void transfer(Context* from, int to, bool from_finished);
    void to_scheduler(Context* from, bool from_finished);
    // Run by every context right after it gets the CPU back.
    void after_switch();
    // Reports what a signal handler stopped (abandon_from_signal).
    void report_signal();
    // The running CUDA thread waits: the next runnable one gets the CPU.
    void park();
    void thread_returned(int t);
    void enqueue(int t) { queue_[(queue_tail_++) & queue_mask_] = t; }
    void enqueue_group(int* ids, int n);
    bool queue_empty() const { return queue_head_ == queue_tail_; }
    void complete_warp_group(int warp, unsigned mask);
    bool resolve_activemask();
    std::string deadlock_report() const;
    void abandon_block();
    void fail_from_scheduler(cudaError_t error, const std::string& message);
    std::string lane_name(int t) const;
    std::string block_name() const;
    void check_exit_against_waiters(int t);
    void give_stack(int t);
    void release_barrier(detail::BarrierKind kind);
    [[gnu::cold, gnu::noinline]] void fail_barrier_after_return(int t, Site site);
    [[gnu::cold, gnu::noinline]] void fail_divergent_barrier();
    [[gnu::cold, gnu::noinline]] void check_warp_call(detail::WarpOpKind op, unsigned mask, int width, Site site);

    StackPool stacks_;
    SharedArena arena_;
    Context scheduler_;
    // The stack of a CUDA thread that returned, to reuse once off it.
    Stack finished_stack_;
    bool has_finished_stack_ = false;

    LaunchState* launch_ = nullptr;
    WarpRecorder* recorder_ = nullptr;
    int n_ = 0;  // threads per block
    std::vector<CudaThread> threads_;
    std::vector<Warp> warps_;
    std::vector<int> queue_;
    std::vector<int> scratch_;
    std::size_t queue_head_ = 0, queue_tail_ = 0, queue_mask_ = 0;

    // The running block.
    uint3 block_index_{0, 0, 0};
    std::uint64_t block_linear_ = 0;
    std::uint64_t event_ = 0;  // barriers and wake-ups so far (seeds the schedule)
    int running_ = -1;         // the CUDA thread on this worker's CPU, or -1
    int done_ = 0;
    int arrived_ = 0;          // threads waiting at the barrier
    int first_at_barrier_ = -1, other_site_at_barrier_ = -1;
    Site barrier_site_{nullptr, 0};
    long barrier_sum_ = 0;
    int first_exited_ = -1;
    std::uint32_t barrier_epoch_ = 0;
    bool block_failed_ = false;
    // What a signal handler left for the scheduler to report.
    bool signal_abandoned_ = false;
    int abandon_signal_ = 0;
    const void* abandon_address_ = nullptr;
    const void* abandon_pc_ = nullptr;
    int abandon_thread_ = -1;
};

namespace detail {
// A device function (__syncthreads, a shuffle, ...) called from host code: says so and stops.
[[noreturn]] void outside_kernel(const char* what, Site site);
}  // namespace detail

// The runner of the calling worker thread, or nullptr outside kernels.
BlockRunner* current_runner();
void set_current_runner(BlockRunner* runner);

}  // namespace cudacpu
