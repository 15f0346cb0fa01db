// Times the CPU matrix multiplies of cpu_gemm.h on the host, over the sweep's
// sizes, until one run would take longer than a time cap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_report.h"
#include "shape.h"
#include "tolerance.h"

struct CpuBenchOptions {
    double max_run_seconds = 2;  // a size whose run is predicted longer is skipped
    std::uint64_t seed = 1;      // inputs come from the harness's generator
    Tolerance tolerance;         // the matmul task's: each result is checked before it is timed
};

// One row per (implementation, shape): timed, or why not.
void bench_cpu_gemms(const std::vector<Shape>& shapes, const CpuBenchOptions& options, BenchReport& report);

// The host CPU's model name from /proc/cpuinfo ("" where there is none).
std::string host_cpu_name();
