#include "warp_semantics.h"

namespace cudacpu {

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

detail::WarpOpKind family(detail::WarpOpKind op) {
    if (op == detail::kReduceMinS) return detail::kReduceMinU;
    if (op == detail::kReduceMaxS) return detail::kReduceMaxU;
    return op;
}

// As PTX's shfl.sync: c = ((32 - width) << 8) | 0x1f for idx, down and xor, (32 - width) << 8 for up.
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

}  // namespace cudacpu
