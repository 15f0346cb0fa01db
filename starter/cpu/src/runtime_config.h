// Settings read once from the environment (each also has an API call in
// cudacpu/extension.h, except the stack size).
//   CUDA_CPU_WORKERS          worker threads (default: the CPUs this process may use)
//   CUDA_CPU_STACK_KB         stack per CUDA thread (default 64, or 256 under AddressSanitizer)
//   CUDA_CPU_LAUNCH_TIMEOUT   seconds a launch may run (default 60; 0: no limit)
//   CUDA_CPU_SCHEDULE         default | reverse | random:SEED
//   CUDA_CPU_QUIET            1: do not print diagnostics (they are still returned)
#pragma once

#include <cstddef>

namespace cudacpu {

struct RuntimeConfig {
    std::size_t stack_bytes;
};

const RuntimeConfig& config();
int available_cpus();

}  // namespace cudacpu
