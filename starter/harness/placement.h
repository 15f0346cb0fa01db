// Where a case's arrays sit in their allocations, call by call.
//
// Before every call (check run, warm-up or timed run) each input is copied
// from its pristine copy to a fresh offset inside an allocation with room to
// spare, and the output is placed (and poisoned) at a fresh offset of its own,
// so no two calls are likely to see the same pointers: a kernel that caches
// its results by pointer computes them again, and one that leaves the output
// unwritten finds the poison there, never an earlier call's answer.
//
// Offsets are multiples of 256 bytes. Students are promised 16-byte alignment
// (float4 and 16-byte cp.async stay legal); the harness gives more so that a
// sample's memory traffic does not depend on the draw (a 16-byte shift costs a
// streaming kernel an extra 32-byte sector per 128-byte line, which would add
// noise to paired timing). Offsets are a pure function of (seed, array, call):
// a run repeats with its seed, and the student's and the solution's processes,
// which make the same calls, see the same placement in every timed pair.
//
// Stored cases (data/) are placed at offset 0 of allocations of their exact
// size, so compute-sanitizer (make memcheck) still sees a read past an array's
// end leave its allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "counter_rng.h"

constexpr std::size_t kPlacementAlign = 256;
constexpr std::uint64_t kPlacementSlots = 16384;
// Bytes to spare in each array's allocation: offsets 0 .. kPlacementSlack (4 MiB less 256 bytes).
constexpr std::size_t kPlacementSlack = kPlacementAlign * (kPlacementSlots - 1);
// The generator's stream numbers for placements: far above any input's (0, 1, ...).
constexpr std::uint64_t kPlacementStream = std::uint64_t(1) << 32;

// Byte offset of array `array` (the inputs 0, 1, ..., then the output) at call
// `call` (0, 1, ... over the case's check, warm-up and timed runs) under `seed`.
inline std::size_t placement_offset(std::uint64_t seed, std::uint64_t array, std::uint64_t call) {
    return kPlacementAlign * static_cast<std::size_t>(rng_bits(rng_key(seed, kPlacementStream + array), call) %
                                                      kPlacementSlots);
}
