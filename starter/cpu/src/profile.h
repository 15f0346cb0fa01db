// Performance counters: what a GPU's memory system would make of each warp's
// accesses, counted from the accesses themselves (profile.cpp says how).
//
// They use the race checker's instrumentation (kernels built with
// `cudacpu.py compile --racecheck`); a profiled launch is counted instead of
// race-checked. One JSON line per launch goes to the file that
// CUDA_CPU_PROFILE (or cudacpu_set_profile) names.
#pragma once

#include <cstddef>
#include <cstdint>

#include "launch_state.h"

namespace cudacpu {

class WarpRecorder;  // one worker's accesses and counts during a profiled launch

enum class AccessOp : std::uint8_t { kLoad, kStore, kAtomic };

// Whether this launch is to be counted: a profile was asked for and the
// program's kernels are instrumented.
bool profile_enabled();
void profile_begin(const LaunchState& launch);
// Merges the workers' counts and writes the launch's line (nothing if it failed).
void profile_end(const LaunchState& launch);

// The recorder a worker uses for `launch`, or nullptr when the launch is not profiled.
WarpRecorder* profile_attach(const LaunchState& launch);

// One access by thread `thread` of the running block. Shared-memory offsets are
// from the block's shared memory base (banks only depend on the offset).
void profile_record(WarpRecorder* recorder, int thread, const void* pc, std::uintptr_t address, std::size_t size,
                    AccessOp op, bool shared);
// Warp `warp` (every warp: -1) has reached a point where its lanes are back
// together (a __syncthreads(), or all of them returned). Cheap: called on the
// CUDA thread's own stack, it only closes the warp's stretch of accesses.
void profile_converged(WarpRecorder* recorder, int warp);
// The block is done (called from the worker's scheduler, not from a CUDA
// thread): its stretches are counted; `static_shared_bytes`, what it declared.
void profile_block_done(WarpRecorder* recorder, int threads_per_block, std::size_t static_shared_bytes);
// A block starts: accesses left from one that failed are dropped.
void profile_discard(WarpRecorder* recorder);

}  // namespace cudacpu
