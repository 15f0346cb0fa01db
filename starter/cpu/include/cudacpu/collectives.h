// __syncthreads() and the warp collectives (shuffles, votes, __syncwarp,
// __activemask, match and reduce). Each is a point where a CUDA thread waits
// for others, so each switches fibers; the runtime checks on the way that
// the whole block reaches the barrier, that every lane named in a mask takes
// part, and reports the file:line of each party when they do not.
//
// They are macros so that they can record the caller's file and line.
#pragma once

#include <cstring>
#include <type_traits>

#include "device_state.h"

namespace cudacpu {
namespace detail {

enum BarrierKind : int { kBarrierPlain, kBarrierCount, kBarrierAnd, kBarrierOr };

enum WarpOpKind : int {
    kShflIdx,
    kShflUp,
    kShflDown,
    kShflXor,
    kVoteAll,
    kVoteAny,
    kVoteBallot,
    kActiveMask,
    kSyncWarp,
    kMatchAny,
    kMatchAll,
    kReduceAddU,
    kReduceMinU,
    kReduceMaxU,
    kReduceMinS,
    kReduceMaxS,
    kReduceAnd,
    kReduceOr,
    kReduceXor,
};

struct WarpResult {
    unsigned long long value;
    int predicate;
};

// In the runtime: they suspend the calling CUDA thread until its partners arrive.
int barrier(BarrierKind kind, int predicate, Site site);
WarpResult warp_op(WarpOpKind op, unsigned mask, unsigned long long value, int arg, int width, Site site);

template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                  "warp shuffles move values of at most 8 bytes (int, float, double, ...)");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return bits;
}

template <class T>
inline T from_bits(unsigned long long bits) {
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
}

template <class T>
inline T shuffle(WarpOpKind op, Site s, unsigned mask, T var, int arg, int width) {
    return from_bits<T>(warp_op(op, mask, to_bits(var), arg, width, s).value);
}

}  // namespace detail

// __syncwarp() and __syncwarp(mask): an object that remembers the call's line,
// called with or without a mask (a variadic macro cannot drop the comma
// portably in C++17).
struct SyncWarp {
    Site site;
    void operator()(unsigned mask = 0xffffffffu) const { detail::warp_op(detail::kSyncWarp, mask, 0, 0, 32, site); }
};
template <class T>
inline T shfl_sync(Site s, unsigned mask, T var, int src_lane, int width = 32) {
    return detail::shuffle(detail::kShflIdx, s, mask, var, src_lane, width);
}
template <class T>
inline T shfl_up_sync(Site s, unsigned mask, T var, unsigned delta, int width = 32) {
    return detail::shuffle(detail::kShflUp, s, mask, var, static_cast<int>(delta), width);
}
template <class T>
inline T shfl_down_sync(Site s, unsigned mask, T var, unsigned delta, int width = 32) {
    return detail::shuffle(detail::kShflDown, s, mask, var, static_cast<int>(delta), width);
}
template <class T>
inline T shfl_xor_sync(Site s, unsigned mask, T var, int lane_mask, int width = 32) {
    return detail::shuffle(detail::kShflXor, s, mask, var, lane_mask, width);
}
inline int all_sync(Site s, unsigned mask, int predicate) {
    return detail::warp_op(detail::kVoteAll, mask, predicate != 0, 0, 32, s).predicate;
}
inline int any_sync(Site s, unsigned mask, int predicate) {
    return detail::warp_op(detail::kVoteAny, mask, predicate != 0, 0, 32, s).predicate;
}
inline unsigned ballot_sync(Site s, unsigned mask, int predicate) {
    return static_cast<unsigned>(detail::warp_op(detail::kVoteBallot, mask, predicate != 0, 0, 32, s).value);
}
inline unsigned activemask(Site s) {
    return static_cast<unsigned>(detail::warp_op(detail::kActiveMask, 0, 0, 0, 32, s).value);
}
template <class T>
inline unsigned match_any_sync(Site s, unsigned mask, T value) {
    return static_cast<unsigned>(detail::warp_op(detail::kMatchAny, mask, detail::to_bits(value), 0, 32, s).value);
}
template <class T>
inline unsigned match_all_sync(Site s, unsigned mask, T value, int* pred) {
    const detail::WarpResult r = detail::warp_op(detail::kMatchAll, mask, detail::to_bits(value), 0, 32, s);
    *pred = r.predicate;
    return static_cast<unsigned>(r.value);
}
inline unsigned reduce_sync(Site s, detail::WarpOpKind op, unsigned mask, unsigned value) {
    return static_cast<unsigned>(detail::warp_op(op, mask, value, 0, 32, s).value);
}
inline int reduce_sync(Site s, detail::WarpOpKind op, unsigned mask, int value) {
    // Signed min/max compare as ints; add wraps the same either way.
    const detail::WarpOpKind signed_op = op == detail::kReduceMinU   ? detail::kReduceMinS
                                         : op == detail::kReduceMaxU ? detail::kReduceMaxS
                                                                     : op;
    return static_cast<int>(static_cast<unsigned>(
        detail::warp_op(signed_op, mask, static_cast<unsigned>(value), 0, 32, s).value));
}

}  // namespace cudacpu

#define __syncthreads() ((void)::cudacpu::detail::barrier(::cudacpu::detail::kBarrierPlain, 1, CUDACPU_HERE))
#define __syncthreads_count(p) ::cudacpu::detail::barrier(::cudacpu::detail::kBarrierCount, (p) != 0, CUDACPU_HERE)
#define __syncthreads_and(p) ::cudacpu::detail::barrier(::cudacpu::detail::kBarrierAnd, (p) != 0, CUDACPU_HERE)
#define __syncthreads_or(p) ::cudacpu::detail::barrier(::cudacpu::detail::kBarrierOr, (p) != 0, CUDACPU_HERE)
#define __syncwarp ::cudacpu::SyncWarp{CUDACPU_HERE}
#define __shfl_sync(...) ::cudacpu::shfl_sync(CUDACPU_HERE, __VA_ARGS__)
#define __shfl_up_sync(...) ::cudacpu::shfl_up_sync(CUDACPU_HERE, __VA_ARGS__)
#define __shfl_down_sync(...) ::cudacpu::shfl_down_sync(CUDACPU_HERE, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cudacpu::shfl_xor_sync(CUDACPU_HERE, __VA_ARGS__)
#define __all_sync(mask, pred) ::cudacpu::all_sync(CUDACPU_HERE, (mask), (pred))
#define __any_sync(mask, pred) ::cudacpu::any_sync(CUDACPU_HERE, (mask), (pred))
#define __ballot_sync(mask, pred) ::cudacpu::ballot_sync(CUDACPU_HERE, (mask), (pred))
#define __activemask() ::cudacpu::activemask(CUDACPU_HERE)
#define __match_any_sync(mask, value) ::cudacpu::match_any_sync(CUDACPU_HERE, (mask), (value))
#define __match_all_sync(mask, value, pred) ::cudacpu::match_all_sync(CUDACPU_HERE, (mask), (value), (pred))
#define __reduce_add_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceAddU, (mask), (value))
#define __reduce_min_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceMinU, (mask), (value))
#define __reduce_max_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceMaxU, (mask), (value))
#define __reduce_and_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceAnd, (mask), (unsigned)(value))
#define __reduce_or_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceOr, (mask), (unsigned)(value))
#define __reduce_xor_sync(mask, value) ::cudacpu::reduce_sync(CUDACPU_HERE, ::cudacpu::detail::kReduceXor, (mask), (unsigned)(value))
