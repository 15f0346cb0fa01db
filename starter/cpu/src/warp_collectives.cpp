// The warp collectives (shuffles, votes, __syncwarp, __activemask, match,
// reduce) as the block runner runs them: a lane waits until every lane its
// mask names has arrived, then the last one computes every lane's result.
// A mask that names a lane that returned, leaves out the caller, or lanes
// that call different warp functions together end the launch with a report.
#include <algorithm>
#include <cstdio>

#include "handoff.h"
#include "warp_semantics.h"

namespace cudacpu {

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

namespace detail {

WarpResult warp_op(WarpOpKind op, unsigned mask, unsigned long long value, int arg, int width, Site site) {
    BlockRunner* r = current_runner();
    if (!r || !r->in_thread()) outside_kernel(op_name(op), site);
    return r->warp_op(op, mask, value, arg, width, site);
}

}  // namespace detail
}  // namespace cudacpu
