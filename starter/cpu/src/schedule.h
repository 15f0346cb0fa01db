// The order in which a block's threads run between barriers. The default is
// thread 0, 1, 2, ...; the permuted orders make a kernel that relies on one
// order (a missing __syncthreads, a shared-memory race) give different
// results, the same for the same seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cudacpu {

struct Schedule {
    enum Kind { kDefault, kReverse, kRandom } kind = kDefault;
    std::uint64_t seed = 0;

    // Parses "default", "reverse" or "random:SEED"; false if it is none of them.
    static bool parse(const std::string& spec, Schedule* out);
    std::string describe() const;

    // Fills `order` with a permutation of `ids` (in place) for the given
    // block and event: phase numbers count barriers, then warp wake-ups.
    void arrange(int* ids, int n, std::uint64_t block, std::uint64_t event) const;

    // The block to run `i`-th of `count`: in order by default, the last first
    // for reverse, a seeded permutation for random. (Blocks run in any order
    // on a GPU: a kernel that needs block 0 to go first is wrong.)
    std::uint64_t block_at(std::uint64_t i, std::uint64_t count) const;
};

// The process-wide schedule (CUDA_CPU_SCHEDULE, cudacpu_set_schedule).
Schedule current_schedule();

}  // namespace cudacpu
