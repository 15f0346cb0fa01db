// The device's practical ceilings, measured in the same run as the cases:
//   copy bandwidth: a large device-to-device cudaMemcpy, counting bytes read
//                   plus bytes written (memory-bound tasks are rated against it);
//   FP32 GEMM:      cuBLAS SGEMM at 4096^3 in plain FP32 (pedantic math: no
//                   TF32, no tensor cores), which matmul rows are rated against.
#pragma once

#include <string>

#include "shape.h"
#include "stats.h"
#include "timing.h"

struct DeviceLimits {
    double copy_gbps = 0;
    std::size_t copy_bytes = 0;  // size of the copied buffer
    SampleStats copy_stats;
    double sgemm_gflops = 0;
    Shape sgemm_shape = Shape::gemm(4096, 4096, 4096);
    SampleStats sgemm_stats;
};

DeviceLimits measure_limits(const TimingOptions& options);
