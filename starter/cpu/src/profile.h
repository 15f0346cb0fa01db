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

class BlockRunner;
class WarpRecorder;  // one worker's accesses and counts during a profiled launch

enum class AccessOp : std::uint8_t { kLoad, kStore, kAtomic };

// Whether this launch is to be counted: a profile was asked for and the
// program's kernels are instrumented.
bool profile_enabled();
void profile_begin(const LaunchState& launch);
// Merges the workers' counts and writes the launch's line (nothing if it failed).
void profile_end(const LaunchState& launch);

// The recorder `runner` uses for the current profiled launch, or nullptr.
WarpRecorder* profile_attach(const BlockRunner* runner);
// The runner is done with the launch; `static_shared_bytes` is what its blocks declared.
void profile_detach(WarpRecorder* recorder, std::size_t static_shared_bytes);

// One access by thread `thread` of the running block. Shared-memory offsets are
// from the block's shared memory base (banks only depend on the offset).
void profile_record(WarpRecorder* recorder, int thread, const void* pc, std::uintptr_t address, std::size_t size,
                    AccessOp op, bool shared);
// Warp `warp` (every warp: -1) has reached a point where its lanes are back
// together (a __syncthreads(), or all of them returned): count its accesses.
void profile_flush(WarpRecorder* recorder, int warp, int threads_per_block);
// A block starts: accesses left from one that failed are dropped.
void profile_discard(WarpRecorder* recorder);

}  // namespace cudacpu
