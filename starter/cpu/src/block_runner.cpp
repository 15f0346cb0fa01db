#include "block_runner.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "diagnostics.h"
#include "handoff.h"
#include "runtime_config.h"
#include "sanitizer_hooks.h"
#include "warp_semantics.h"

__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread dim3 blockDim;
__thread dim3 gridDim;

namespace cudacpu {
namespace detail {
__thread Site t_exit_site;
__thread char* t_dynamic_shared;
}  // namespace detail

namespace {

thread_local BlockRunner* t_runner = nullptr;

}  // namespace

BlockRunner* current_runner() { return t_runner; }
void set_current_runner(BlockRunner* runner) { t_runner = runner; }

BlockRunner::BlockRunner() : stacks_(config().stack_bytes) {}

std::string BlockRunner::block_name() const { return "block " + coords(block_index_); }

std::string BlockRunner::thread_name(int t) const { return "thread " + coords(threads_[t].index) + " of " + block_name(); }

std::string BlockRunner::lane_name(int t) const {
    return "lane " + std::to_string(t % 32) + " of warp " + std::to_string(t / 32) + " (thread " +
           coords(threads_[t].index) + ")";
}

std::string BlockRunner::running_thread() const {
    return running_ >= 0 ? thread_name(running_) : std::string("no CUDA thread");
}

bool BlockRunner::on_thread_stack(const void* sp) const {
    if (running_ < 0 || !threads_[running_].has_stack) return false;
    const Stack& s = threads_[running_].stack;
    const char* p = static_cast<const char*>(sp);
    return p >= s.base - 4096 && p < s.base + s.size;
}

void BlockRunner::give_stack(int t) {
    CudaThread& th = threads_[t];
    th.stack = stacks_.take();
    th.has_stack = true;
    init_context(&th.context, th.stack, &BlockRunner::fiber_main, this);
}

void BlockRunner::prepare(LaunchState& launch) {
    launch_ = &launch;
    n_ = launch.threads_per_block;
    if (static_cast<int>(threads_.size()) < n_) threads_.resize(n_);
    const dim3 b = launch.block;
    for (int t = 0; t < n_; ++t) {
        const unsigned u = static_cast<unsigned>(t);
        threads_[t].index = uint3{u % b.x, (u / b.x) % b.y, u / (b.x * b.y)};
    }
    warps_.assign((n_ + 31) / 32, Warp{});
    for (int w = 0; w < static_cast<int>(warps_.size()); ++w) {
        const int lanes = std::min(32, n_ - 32 * w);
        warps_[w].exists = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    }
    std::size_t capacity = 1;
    while (capacity < static_cast<std::size_t>(n_)) capacity *= 2;
    queue_.assign(capacity, 0);
    queue_mask_ = capacity - 1;
    scratch_.assign(n_, 0);
    blockDim = launch.block;
    gridDim = launch.grid;
}

void BlockRunner::run_blocks(LaunchState& launch) {
    BlockRunner* previous = t_runner;
    t_runner = this;
    prepare(launch);
    recorder_ = profile_attach(launch);
    while (!launch.failed.load(std::memory_order_relaxed)) {
        const std::uint64_t i = launch.next_block.fetch_add(1, std::memory_order_relaxed);
        if (i >= launch.block_count) break;
        run_block(launch.schedule.block_at(i, launch.block_count));
    }
    recorder_ = nullptr;
    t_runner = previous;
    launch_ = nullptr;
}

void BlockRunner::run_block(std::uint64_t b) {
    const dim3 g = launch_->grid;
    block_linear_ = b;
    block_index_ = uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>((b / g.x) % g.y),
                         static_cast<unsigned>(b / (std::uint64_t(g.x) * g.y))};
    blockIdx = block_index_;
    arena_.begin_block(launch_->dynamic_shared_bytes);
    detail::t_dynamic_shared = arena_.dynamic_base();
    profile_discard(recorder_);
    done_ = arrived_ = 0;
    first_at_barrier_ = other_site_at_barrier_ = first_exited_ = -1;
    barrier_sum_ = 0;
    barrier_epoch_ = 0;
    event_ = 0;
    block_failed_ = false;
    for (int t = 0; t < n_; ++t) {
        threads_[t].state = State::kNotStarted;
        threads_[t].exit_site = Site{nullptr, 0};
    }
    for (Warp& w : warps_) w.waiting = w.exited = w.activemask = w.generation = 0;
    queue_head_ = queue_tail_ = 0;
    for (int t = 0; t < n_; ++t) scratch_[t] = t;
    enqueue_group(scratch_.data(), n_);

    // The CUDA threads pass the CPU among themselves; it comes back here only
    // when none of them can run.
    while (true) {
        const int next = next_runnable();
        if (next >= 0) {
            transfer(&scheduler_, next, false);
            if (signal_abandoned_) report_signal();
            continue;
        }
        if (block_failed_ || launch_->failed.load(std::memory_order_relaxed)) break;
        if (done_ == n_) {
            profile_block_done(recorder_, n_, arena_.static_bytes());
            return;
        }
        if (resolve_activemask()) continue;
        fail_from_scheduler(cudaErrorLaunchFailure, deadlock_report());
        break;
    }
    abandon_block();
}

void BlockRunner::enqueue_group(int* ids, int n) {
    launch_->schedule.arrange(ids, n, block_linear_, event_++);
    for (int i = 0; i < n; ++i) {
        threads_[ids[i]].state = State::kQueued;
        enqueue(ids[i]);
    }
}

void BlockRunner::report_signal() {
    // The signal handler never returned, so its signal is still blocked here.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, abandon_signal_);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    signal_abandoned_ = false;
    const bool overflow = abandon_address_ && stacks_.is_guard_page(abandon_address_);
    launch_->fail(abandon_signal_ == timeout_signal() ? cudaErrorLaunchTimeout : cudaErrorIllegalAddress,
                  describe_fault(*launch_, thread_name(abandon_thread_), abandon_signal_, abandon_address_,
                                 abandon_pc_, overflow, stacks_.stack_bytes()));
}

void BlockRunner::fiber_main(void* self) {
    finish_switch();
    auto* r = static_cast<BlockRunner*>(self);
    r->after_switch();
    while (true) {
        const int t = r->running_;
        detail::t_exit_site = Site{nullptr, 0};
        std::string exception;
        try {
            r->launch_->entry(r->launch_->context);
        } catch (const std::exception& e) {
            exception = e.what();
        } catch (...) {
            exception = "an exception that is not a std::exception";
        }
        if (!exception.empty())
            r->fail_from_thread(cudaErrorLaunchFailure, r->launch_->describe() + ": " + r->thread_name(t) +
                                                            " threw a C++ exception out of the kernel: " + exception);
        r->threads_[t].exit_site = detail::t_exit_site;
        r->thread_returned(t);
        // The next thread: one that has not started yet runs right here, on
        // this stack, without any switch (so a block without barriers runs
        // as a plain loop); one that waits somewhere gets the CPU back.
        const int next = r->next_runnable();
        CudaThread& done = r->threads_[t];
        if (next >= 0 && !r->threads_[next].has_stack) {
            CudaThread& fresh = r->threads_[next];
            fresh.stack = done.stack;
            fresh.has_stack = true;
            done.has_stack = false;
            fresh.state = State::kRunning;
            r->running_ = next;
            threadIdx = fresh.index;
            continue;
        }
        r->finished_stack_ = done.stack;
        r->has_finished_stack_ = true;
        done.has_stack = false;
        Context gone;
        if (next >= 0) r->transfer(&gone, next, true);
        else r->to_scheduler(&gone, true);
        __builtin_unreachable();
    }
}

void BlockRunner::thread_returned(int t) {
    CudaThread& th = threads_[t];
    th.state = State::kDone;
    ++done_;
    Warp& warp = warps_[t / 32];
    warp.exited |= 1u << (t % 32);
    if (recorder_ && warp.exited == warp.exists) profile_converged(recorder_, t / 32);
    if (first_exited_ < 0) first_exited_ = t;
    if (arrived_ > 0)
        fail_from_thread(cudaErrorLaunchFailure,
                         launch_->describe() + ": " + thread_name(t) + " returned at " + where(th.exit_site) +
                             " while " + thread_name(first_at_barrier_) + " waits at __syncthreads() at " +
                             where(threads_[first_at_barrier_].wait_site) +
                             ". Every thread of a block must reach every __syncthreads(): instead of returning "
                             "early, skip only the work (for example, guard the final store).");
    check_exit_against_waiters(t);
}

void BlockRunner::check_exit_against_waiters(int t) {
    const int w = t / 32, lane = t % 32;
    unsigned waiting = warps_[w].waiting;
    while (waiting) {
        const int other = 32 * w + __builtin_ctz(waiting);
        waiting &= waiting - 1;
        const CudaThread& o = threads_[other];
        if (o.mask & (1u << lane))
            fail_from_thread(cudaErrorLaunchFailure,
                             launch_->describe() + ": in " + block_name() + ", " + lane_name(t) + " returned at " +
                                 where(threads_[t].exit_site) + " while " + lane_name(other) + " waits in " +
                                 op_name(o.op) + " at " + where(o.wait_site) + " with mask " + hex(o.mask) +
                                 ", which names it. Every lane in the mask must call the same warp function.");
    }
}

void BlockRunner::fail_barrier_after_return(int t, Site site) {
    fail_from_thread(cudaErrorLaunchFailure,
                     launch_->describe() + ": " + thread_name(t) + " waits at __syncthreads() at " + where(site) +
                         ", but " + thread_name(first_exited_) + " already returned at " +
                         where(threads_[first_exited_].exit_site) +
                         ". Every thread of a block must reach every __syncthreads(): instead of returning "
                         "early, skip only the work (for example, guard the final store).");
}

void BlockRunner::fail_divergent_barrier() {
    fail_from_thread(cudaErrorLaunchFailure,
                     launch_->describe() + ": the threads of " + block_name() + " wait at different __syncthreads(): " +
                         thread_name(first_at_barrier_) + " at " + where(barrier_site_) + ", " +
                         thread_name(other_site_at_barrier_) + " at " +
                         where(threads_[other_site_at_barrier_].wait_site) +
                         ". A __syncthreads() inside an if or a loop must be reached by every thread of the block, "
                         "the same number of times.");
}

void BlockRunner::release_barrier(detail::BarrierKind kind) {
    if (other_site_at_barrier_ >= 0) fail_divergent_barrier();
    int result = 0;
    switch (kind) {
        case detail::kBarrierCount: result = static_cast<int>(barrier_sum_); break;
        case detail::kBarrierAnd: result = barrier_sum_ == n_; break;
        case detail::kBarrierOr: result = barrier_sum_ > 0; break;
        default: break;
    }
    for (int i = 0; i < n_; ++i) {
        threads_[i].barrier_result = result;
        scratch_[i] = i;
    }
    arrived_ = 0;
    profile_converged(recorder_, -1);
    ++barrier_epoch_;
    enqueue_group(scratch_.data(), n_);
}

int BlockRunner::barrier(detail::BarrierKind kind, int predicate, Site site) {
    const int t = running_;
    CudaThread& th = threads_[t];
    if (__builtin_expect(first_exited_ >= 0, 0)) fail_barrier_after_return(t, site);
    if (arrived_ == 0) {
        barrier_site_ = site;
        first_at_barrier_ = t;
        other_site_at_barrier_ = -1;
        barrier_sum_ = 0;
    } else if (__builtin_expect(site.line != barrier_site_.line || site.file != barrier_site_.file, 0) &&
               !same_site(site, barrier_site_) && other_site_at_barrier_ < 0) {
        other_site_at_barrier_ = t;
    }
    barrier_sum_ += predicate;
    th.state = State::kAtBarrier;
    th.wait_site = site;
    if (++arrived_ == n_) release_barrier(kind);
    park();
    return th.barrier_result;
}

std::string BlockRunner::deadlock_report() const {
    std::string report = launch_->describe() + ": " + block_name() + " cannot go on. ";
    int at_barrier = -1, at_warp = -1;
    for (int t = 0; t < n_; ++t) {
        if (threads_[t].state == State::kAtBarrier && at_barrier < 0) at_barrier = t;
        if (threads_[t].state == State::kAtWarp && at_warp < 0) at_warp = t;
    }
    if (at_warp >= 0) {
        const CudaThread& th = threads_[at_warp];
        const int w = at_warp / 32;
        const unsigned missing = th.mask & ~warps_[w].waiting;
        report += lane_name(at_warp) + " waits in " + op_name(th.op) + " at " + where(th.wait_site) + " with mask " +
                  hex(th.mask);
        if (missing) {
            const int m = 32 * w + __builtin_ctz(missing);
            report += " for " + lane_name(m);
            if (threads_[m].state == State::kAtBarrier)
                report += ", which waits at __syncthreads() at " + where(threads_[m].wait_site);
            else if (threads_[m].state == State::kAtWarp)
                report += ", which waits in " + std::string(op_name(threads_[m].op)) + " at " +
                          where(threads_[m].wait_site) + " with mask " + hex(threads_[m].mask);
        }
        report += ". ";
    }
    if (at_barrier >= 0)
        report += std::to_string(arrived_) + " of its " + std::to_string(n_) + " threads wait at __syncthreads() (" +
                  thread_name(at_barrier) + " at " + where(threads_[at_barrier].wait_site) + "). ";
    report += "Every thread of a block must reach each __syncthreads(), and every lane named in a warp function's "
              "mask must call it.";
    return report;
}

void* BlockRunner::shared_alloc(const void* key, const detail::SharedVarInfo& info) {
    std::string why;
    void* p = arena_.get(key, info, launch_->shared_limit, &why);
    if (!p) fail_from_thread(cudaErrorInvalidValue, launch_->describe() + " " + why + ".");
    return p;
}

void BlockRunner::note_dynamic_shared(const char* name, Site site, std::size_t element_bytes) {
    arena_.note_dynamic(name, site, element_bytes);
}

void BlockRunner::fail_from_scheduler(cudaError_t error, const std::string& message) {
    launch_->fail(error, message);
    block_failed_ = true;
}

void BlockRunner::fail_from_thread(cudaError_t error, const std::string& message) {
    const int t = running_;
    launch_->fail(error, message);
    block_failed_ = true;
    to_scheduler(&threads_[t].context, true);
    __builtin_unreachable();
}

void BlockRunner::abandon_from_signal(int signal, const void* address, const void* pc) {
    const int t = running_;
    block_failed_ = true;
    signal_abandoned_ = true;
    abandon_signal_ = signal;
    abandon_address_ = address;
    abandon_pc_ = pc;
    abandon_thread_ = t;
    to_scheduler(&threads_[t].context, true);
    __builtin_unreachable();
}

void BlockRunner::fail_soon(cudaError_t error, const std::string& message) {
    launch_->fail(error, message);
    block_failed_ = true;
}

void BlockRunner::abandon_block() {
    for (int t = 0; t < n_; ++t) {
        CudaThread& th = threads_[t];
        if (th.has_stack) {
            stacks_.give_back(th.stack, true);
            th.has_stack = false;
        }
    }
}

}  // namespace cudacpu

// --- The entry points kernels call (collectives.h, shared_memory.h) ---------------------------

namespace cudacpu {
namespace detail {

void outside_kernel(const char* what, Site site) {
    std::fprintf(stderr, "cudacpu: %s called at %s outside a kernel (from host code)\n", what, where(site).c_str());
    std::abort();
}

int barrier(BarrierKind kind, int predicate, Site site) {
    BlockRunner* r = t_runner;
    if (!r || !r->in_thread()) outside_kernel("__syncthreads()", site);
    return r->barrier(kind, predicate, site);
}

void* shared_alloc(const void* key, const SharedVarInfo& info) {
    BlockRunner* r = t_runner;
    if (!r || !r->in_thread()) outside_kernel("a __shared__ declaration", info.site);
    return r->shared_alloc(key, info);
}

void note_dynamic_shared(const char* name, Site site, std::size_t element_bytes) {
    BlockRunner* r = t_runner;
    if (r && r->in_thread()) r->note_dynamic_shared(name, site, element_bytes);
}

}  // namespace detail
}  // namespace cudacpu
