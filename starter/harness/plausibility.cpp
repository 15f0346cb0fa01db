#include "plausibility.h"

#include <algorithm>

double peak_fp32_gflops(int sm_count, double clock_mhz) {
    return sm_count * clock_mhz * 1e6 * kFp32LanesPerSm * 2 / 1e9;
}

PlausibilityFloor plausibility_floor(double flops, double bytes, double peak_gflops, double copy_gbps,
                                     double l2_bytes) {
    PlausibilityFloor f;
    const double arithmetic = peak_gflops > 0 ? flops / (kFlopMargin * peak_gflops * 1e9) : 0;
    const double memory = copy_gbps > 0 ? std::max(0.0, bytes - l2_bytes) / (kBandwidthMargin * copy_gbps * 1e9) : 0;
    f.seconds = std::max(arithmetic, memory);
    f.bound = arithmetic > memory ? "fp32_peak" : "bandwidth";
    return f;
}
