// The device's practical ceilings, measured in the same run as the cases:
//   copy bandwidth: a large device-to-device cudaMemcpy, counting bytes read
//                   plus written (memory-bound tasks are rated against it);
//   FP32 GEMM:      cuBLAS SGEMM at 4096^3 in plain FP32 (pedantic math: no
//                   TF32, no tensor cores), which matmul rows are rated against;
// and its physical FP32 peak, from its SM count and peak clock, which with the
// copy bandwidth sets the plausibility floor (plausibility.h).
#pragma once

#include <string>

#include "plausibility.h"
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
    double peak_fp32_gflops = 0;  // SMs x peak SM clock x 128 lanes x 2
    int peak_sm_clock_mhz = 0;
    std::size_t l2_bytes = 0;

    // The fastest time a call doing `flops` and moving `bytes` can honestly take here.
    PlausibilityFloor floor(double flops, double bytes) const {
        return plausibility_floor(flops, bytes, peak_fp32_gflops, copy_gbps, static_cast<double>(l2_bytes));
    }
};

DeviceLimits measure_limits(const TimingOptions& options);
