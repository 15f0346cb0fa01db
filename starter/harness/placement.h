// Where a case's arrays sit in device memory, call by call.
//
// Fresh placement (grading, timing, the student suite's random cases): before
// every call (check run, warm-up or timed run) each input is copied from its
// pristine copy to a fresh offset inside an allocation with room to spare, and
// the output is placed (and poisoned) at a fresh offset of its own, so no two
// calls are likely to see the same pointers: a kernel that caches its results
// by pointer computes them again, and one that leaves the output unwritten
// finds the poison there, never an earlier call's answer. The room around an
// input is poisoned, and a poisoned guard region follows the output, so an
// overrun that a memory checker cannot see (it stays inside the allocation)
// still shows: a read as poison in the result, a write as a changed guard.
//
// Offsets are multiples of 256 bytes. Students are promised 16-byte alignment
// (float4 and 16-byte cp.async stay legal); the harness gives more so that a
// sample's memory traffic does not depend on the draw (a 16-byte shift costs a
// streaming kernel an extra 32-byte sector per 128-byte line, which would add
// noise to paired timing). Offsets are a pure function of (seed, array, call):
// a run repeats with its seed, and the student's and the solution's processes,
// which make the same calls, see the same placement in every timed pair.
//
// Exact placement (--fixed-placement, compute-sanitizer's runs): every input
// and the output is alone in an allocation of exactly its size, at its start,
// with nothing after it (no room, no guard region), so the smallest overrun,
// one element past an end, leaves the allocation. compute-sanitizer memcheck
// then reports it: it bounds an allocation by the size asked for, not by what
// cudaMalloc rounded it up to, and tools/sanitize.py has it pad every
// allocation, since the next one may otherwise start right at an array's end.
// AddressSanitizer on the CPU backend reports it too. cudaMalloc's 256-byte
// alignment keeps the 16-byte promise.
//
// Stored cases (data/) sit at offset 0 too, each input in an allocation of its
// exact size; their output keeps its guard region, for `make test`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// The three placements above: fresh (grading), stored (data/ cases), exact (compute-sanitizer's runs).
enum class Placement { fresh, stored, exact };

// The placement of a case: exact when compute-sanitizer's run asks for it (`fixed`), stored cases included.
inline Placement placement_for(bool fixed, bool stored_case) {
    return fixed ? Placement::exact : stored_case ? Placement::stored : Placement::fresh;
}

// Elements of the poisoned guard region after an output of `output_elements`: a store without its bounds
// check lands there instead of in unrelated memory, and is reported. None in exact placement, where the
// output ends its allocation.
inline std::size_t guard_elements(Placement p, std::size_t output_elements) {
    if (p == Placement::exact) return 0;
    return std::min<std::size_t>(std::max<std::size_t>(output_elements, 1 << 14), 1 << 22);
}

// A case's device allocations: one of its own for each input and one for the output, in bytes.
struct CaseAllocations {
    std::vector<std::size_t> inputs;  // each input's allocation
    std::size_t output = 0;           // the output's allocation, its guard region included
    std::size_t guard = 0;            // elements of the guard region after the output
    std::size_t slack = 0;            // bytes to spare in each allocation for the offset
};

inline CaseAllocations case_allocations(Placement p, const std::vector<std::size_t>& input_elements,
                                        std::size_t output_elements, std::size_t element_size) {
    CaseAllocations a;
    a.slack = p == Placement::fresh ? kPlacementSlack : 0;
    for (std::size_t n : input_elements) a.inputs.push_back(n * element_size + a.slack);
    a.guard = guard_elements(p, output_elements);
    a.output = (output_elements + a.guard) * element_size + a.slack;
    return a;
}

// Byte offset of array `array` in its allocation at call `call`: fresh ones drawn as above, else 0.
inline std::size_t array_offset(Placement p, std::uint64_t seed, std::uint64_t array, std::uint64_t call) {
    return p == Placement::fresh ? placement_offset(seed, array, call) : 0;
}
