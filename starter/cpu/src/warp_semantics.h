// What each warp function is called and computes, independent of how the
// runtime runs it: the names used in reports, and which source lane a
// shuffle reads, exactly as PTX's shfl.sync defines it.
#pragma once

#include "../include/cudacpu/collectives.h"

namespace cudacpu {

const char* op_name(detail::WarpOpKind op);
bool is_shuffle(detail::WarpOpKind op);
// The reductions that differ only in signedness form one collective.
detail::WarpOpKind family(detail::WarpOpKind op);
// The source lane of `lane` for a shuffle, or -1 when the lane keeps its own value.
int shuffle_source(detail::WarpOpKind op, int lane, int arg, int width);
// What a shuffle from a lane that does not take part returns (a GPU's is undefined).
constexpr unsigned long long kShuffleGarbage = 0xFFF0DEADFFF0DEADull;

}  // namespace cudacpu
