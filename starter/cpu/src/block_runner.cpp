#include "block_runner.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "diagnostics.h"
#include "runtime_config.h"
#include "sanitizer_hooks.h"

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

const char* op_name(detail::WarpOpKind op) {
    switch (op) {
        case detail::kShflIdx: return "__shfl_sync";
        case detail::kShflUp: return "__shfl_up_sync";
        case detail::kShflDown: return "__shfl_down_sync";
        case detail::kShflXor: return "__shfl_xor_sync";
        case detail::kVoteAll: return "__all_sync";
        case detail::kVoteAny: return "__any_sync";
        case detail::kVoteBallot: return "__ballot_sync";
        case detail::kActiveMask: return "__activemask";
        case detail::kSyncWarp: return "__syncwarp";
        case detail::kMatchAny: return "__match_any_sync";
        case detail::kMatchAll: return "__match_all_sync";
        case detail::kReduceAddU: return "__reduce_add_sync";
        case detail::kReduceMinU:
        case detail::kReduceMinS: return "__reduce_min_sync";
        case detail::kReduceMaxU:
        case detail::kReduceMaxS: return "__reduce_max_sync";
        case detail::kReduceAnd: return "__reduce_and_sync";
        case detail::kReduceOr: return "__reduce_or_sync";
        case detail::kReduceXor: return "__reduce_xor_sync";
    }
    return "a warp function";
}

bool is_shuffle(detail::WarpOpKind op) {
    return op == detail::kShflIdx || op == detail::kShflUp || op == detail::kShflDown || op == detail::kShflXor;
}

// The reduction ops that differ only in signedness form one collective.
detail::WarpOpKind family(detail::WarpOpKind op) {
    if (op == detail::kReduceMinS) return detail::kReduceMinU;
    if (op == detail::kReduceMaxS) return detail::kReduceMaxU;
    return op;
}

bool same_site(Site a, Site b) {
    return a.line == b.line && (a.file == b.file || (a.file && b.file && std::strcmp(a.file, b.file) == 0));
}

std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

// The garbage a shuffle from a lane that does not take part returns (the GPU's is undefined).
constexpr unsigned long long kShuffleGarbage = 0xFFF0DEADFFF0DEADull;

// Source lane of `lane` for a shuffle, as PTX's shfl.sync defines it; -1 when
// the lane keeps its own value.
int shuffle_source(detail::WarpOpKind op, int lane, int arg, int width) {
    const int segmask = (32 - width) & 0x1f;
    const int cval = op == detail::kShflUp ? 0 : 0x1f;
    const int bval = arg & 0x1f;
    const int max_lane = (lane & segmask) | (cval & ~segmask);
    const int min_lane = lane & segmask;
    int j = lane;
    bool in_range = true;
    switch (op) {
        case detail::kShflUp: j = lane - bval; in_range = j >= max_lane; break;
        case detail::kShflDown: j = lane + bval; in_range = j <= max_lane; break;
        case detail::kShflXor: j = lane ^ bval; in_range = j <= max_lane; break;
        default: j = min_lane | (bval & ~segmask); in_range = j <= max_lane; break;
    }
    return in_range ? j : -1;
}

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

// --- Handing the CPU from one CUDA thread to the next: the hot path --------------------------

inline int BlockRunner::next_runnable() {
    if (queue_empty() || block_failed_ || launch_->failed.load(std::memory_order_relaxed)) return -1;
    return queue_[queue_head_++ & queue_mask_];
}

inline void BlockRunner::after_switch() {
    if (__builtin_expect(has_finished_stack_, 0)) {
        stacks_.give_back(finished_stack_, false);
        has_finished_stack_ = false;
    }
}

void BlockRunner::give_stack(int t) {
    CudaThread& th = threads_[t];
    th.stack = stacks_.take();
    th.has_stack = true;
    init_context(&th.context, th.stack, &BlockRunner::fiber_main, this);
}

inline void BlockRunner::transfer(Context* from, int to, bool from_finished) {
    CudaThread& th = threads_[to];
    if (__builtin_expect(!th.has_stack, 0)) give_stack(to);
    th.state = State::kRunning;
    running_ = to;
    threadIdx = th.index;
    switch_context(from, &th.context, &th.stack, from_finished);
    after_switch();
}

inline void BlockRunner::to_scheduler(Context* from, bool from_finished) {
    running_ = -1;
    switch_context(from, &scheduler_, nullptr, from_finished);
    after_switch();
}

inline void BlockRunner::park() {
    const int me = running_;
    const int next = next_runnable();
    if (next == me) {
        threads_[me].state = State::kRunning;
        return;
    }
    if (next < 0) to_scheduler(&threads_[me].context, false);
    else transfer(&threads_[me].context, next, false);
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
    while (!launch.failed.load(std::memory_order_relaxed)) {
        const std::uint64_t b = launch.next_block.fetch_add(1, std::memory_order_relaxed);
        if (b >= launch.block_count) break;
        run_block(b);
    }
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
        if (done_ == n_) return;
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
    warps_[t / 32].exited |= 1u << (t % 32);
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

void BlockRunner::check_warp_call(detail::WarpOpKind op, unsigned mask, int width, Site site) {
    const int t = running_, w = t / 32, lane = t % 32;
    const Warp& warp = warps_[w];
    const auto who = [&] {
        return launch_->describe() + ": " + thread_name(t) + " (lane " + std::to_string(lane) + " of warp " +
               std::to_string(w) + ") calls " + op_name(op) + " at " + where(site);
    };
    if (is_shuffle(op) && (width < 1 || width > 32 || (width & (width - 1)) != 0))
        fail_from_thread(cudaErrorLaunchFailure,
                         who() + " with width " + std::to_string(width) + ": it must be a power of 2 from 1 to 32.");
    if (!(mask & (1u << lane)))
        fail_from_thread(cudaErrorLaunchFailure,
                         who() + " with mask " + hex(mask) + ", which does not include its own lane. The mask names "
                                                             "the lanes that call it together, the caller included.");
    if (mask & ~warp.exists)
        fail_from_thread(cudaErrorLaunchFailure,
                         who() + " with mask " + hex(mask) + ", but lanes " + hex(mask & ~warp.exists) +
                             " of that warp do not exist: the block has " + std::to_string(n_) + " threads.");
    if (mask & warp.exited) {
        const int gone = 32 * w + __builtin_ctz(mask & warp.exited);
        fail_from_thread(cudaErrorLaunchFailure,
                         who() + " with mask " + hex(mask) + ", but " + lane_name(gone) + " already returned at " +
                             where(threads_[gone].exit_site) +
                             ". Every lane in the mask must call the same warp function.");
    }
}

detail::WarpResult BlockRunner::warp_op(detail::WarpOpKind op, unsigned mask, unsigned long long value, int arg,
                                        int width, Site site) {
    const int t = running_;
    CudaThread& th = threads_[t];
    const int w = t / 32, lane = t % 32;
    Warp& warp = warps_[w];
    const unsigned bit = 1u << lane;
    th.wait_site = site;
    th.op = op;
    if (op == detail::kActiveMask) {
        th.state = State::kAtActiveMask;
        warp.activemask |= bit;
        park();
        return {th.out, 0};
    }
    const bool bad_width = is_shuffle(op) && (width < 1 || width > 32 || (width & (width - 1)) != 0);
    if (__builtin_expect(bad_width || !(mask & bit) || (mask & ~warp.exists) || (mask & warp.exited), 0))
        check_warp_call(op, mask, width, site);
    th.mask = mask;
    th.in = value;
    th.arg = arg;
    th.width = width;
    th.state = State::kAtWarp;
    warp.waiting |= bit;
    if ((warp.waiting & mask) == mask) complete_warp_group(w, mask);
    park();
    return {th.out, th.out_predicate};
}

void BlockRunner::complete_warp_group(int w, unsigned mask) {
    const int first = 32 * w;
    const CudaThread& caller = threads_[running_];
    // Every lane of the group must be in the same collective with the same mask.
    for (unsigned m = mask; m; m &= m - 1) {
        const int t = first + __builtin_ctz(m);
        const CudaThread& o = threads_[t];
        if (o.mask != mask || family(o.op) != family(caller.op))
            fail_from_thread(cudaErrorLaunchFailure,
                             launch_->describe() + ": in " + block_name() + ", the lanes of warp " + std::to_string(w) +
                                 " do not call the same warp function together: " + lane_name(running_) + " calls " +
                                 op_name(caller.op) + " at " + where(caller.wait_site) + " with mask " + hex(mask) +
                                 ", " + lane_name(t) + " calls " + op_name(o.op) + " at " + where(o.wait_site) +
                                 " with mask " + hex(o.mask) + ".");
    }
    const detail::WarpOpKind op = caller.op;
    unsigned long long values[32] = {};
    unsigned predicates = 0;
    for (unsigned m = mask; m; m &= m - 1) {
        const int lane = __builtin_ctz(m);
        values[lane] = threads_[first + lane].in;
        if (values[lane]) predicates |= 1u << lane;
    }
    unsigned long long reduced = 0;
    bool all_equal = true;
    if (op >= detail::kReduceAddU || op == detail::kMatchAll) {
        const int lead = __builtin_ctz(mask);
        reduced = values[lead];
        for (unsigned m = mask & (mask - 1); m; m &= m - 1) {
            const unsigned long long v = values[__builtin_ctz(m)];
            all_equal = all_equal && v == values[lead];
            switch (op) {
                case detail::kReduceAddU: reduced = static_cast<unsigned>(reduced + v); break;
                case detail::kReduceMinU: reduced = std::min<unsigned>(static_cast<unsigned>(reduced), static_cast<unsigned>(v)); break;
                case detail::kReduceMaxU: reduced = std::max<unsigned>(static_cast<unsigned>(reduced), static_cast<unsigned>(v)); break;
                case detail::kReduceMinS:
                    reduced = static_cast<unsigned>(std::min(static_cast<int>(reduced), static_cast<int>(v)));
                    break;
                case detail::kReduceMaxS:
                    reduced = static_cast<unsigned>(std::max(static_cast<int>(reduced), static_cast<int>(v)));
                    break;
                case detail::kReduceAnd: reduced &= v; break;
                case detail::kReduceOr: reduced |= v; break;
                case detail::kReduceXor: reduced ^= v; break;
                default: break;
            }
        }
    }
    int ids[32];
    int count = 0;
    for (unsigned m = mask; m; m &= m - 1) {
        const int lane = __builtin_ctz(m);
        CudaThread& th = threads_[first + lane];
        switch (op) {
            case detail::kShflIdx:
            case detail::kShflUp:
            case detail::kShflDown:
            case detail::kShflXor: {
                const int src = shuffle_source(op, lane, th.arg, th.width);
                th.out = src < 0 ? th.in : ((mask >> src) & 1 ? values[src] : kShuffleGarbage);
                break;
            }
            case detail::kVoteAll: th.out_predicate = (predicates & mask) == mask; break;
            case detail::kVoteAny: th.out_predicate = (predicates & mask) != 0; break;
            case detail::kVoteBallot: th.out = predicates & mask; break;
            case detail::kMatchAny: {
                unsigned same = 0;
                for (unsigned o = mask; o; o &= o - 1)
                    if (values[__builtin_ctz(o)] == th.in) same |= 1u << __builtin_ctz(o);
                th.out = same;
                break;
            }
            case detail::kMatchAll:
                th.out = all_equal ? mask : 0;
                th.out_predicate = all_equal;
                break;
            case detail::kSyncWarp:
            case detail::kActiveMask: break;
            default: th.out = reduced; break;
        }
        ids[count++] = first + lane;
    }
    warps_[w].waiting &= ~mask;
    ++warps_[w].generation;
    enqueue_group(ids, count);
}

bool BlockRunner::resolve_activemask() {
    bool resolved = false;
    for (int w = 0; w < static_cast<int>(warps_.size()); ++w) {
        unsigned pending = warps_[w].activemask;
        while (pending) {
            // Lanes waiting at the same __activemask() call are active together.
            const Site site = threads_[32 * w + __builtin_ctz(pending)].wait_site;
            unsigned group = 0;
            for (unsigned m = pending; m; m &= m - 1)
                if (same_site(threads_[32 * w + __builtin_ctz(m)].wait_site, site)) group |= 1u << __builtin_ctz(m);
            int ids[32];
            int count = 0;
            for (unsigned m = group; m; m &= m - 1) {
                const int t = 32 * w + __builtin_ctz(m);
                threads_[t].out = group;
                ids[count++] = t;
            }
            enqueue_group(ids, count);
            pending &= ~group;
            resolved = true;
        }
        warps_[w].activemask = 0;
    }
    return resolved;
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

namespace {
[[noreturn]] void outside_kernel(const char* what, Site site) {
    std::fprintf(stderr, "cudacpu: %s called at %s outside a kernel (from host code)\n", what, where(site).c_str());
    std::abort();
}
}  // namespace

int barrier(BarrierKind kind, int predicate, Site site) {
    BlockRunner* r = t_runner;
    if (!r || !r->in_thread()) outside_kernel("__syncthreads()", site);
    return r->barrier(kind, predicate, site);
}

WarpResult warp_op(WarpOpKind op, unsigned mask, unsigned long long value, int arg, int width, Site site) {
    BlockRunner* r = t_runner;
    if (!r || !r->in_thread()) outside_kernel(op_name(op), site);
    return r->warp_op(op, mask, value, arg, width, site);
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
