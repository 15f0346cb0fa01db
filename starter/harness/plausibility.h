// The plausibility floor: the fastest time a case can honestly take on this
// device. A kernel measured faster than this did not do its work inside the
// timed region (results cached between calls, work hidden from the timer,
// tensor cores), and the grader gives it no performance credit and lists it
// for the TA. The floor is the larger of two physical limits, each with a
// margin so that no honest kernel comes near it:
//
//   arithmetic: flops / (1.1 · peak FP32), peak = SMs · peak SM clock · 128 lanes · 2
//               (one FMA per lane and cycle). 128 FP32 lanes per SM is the most
//               any NVIDIA architecture has (Ampere's GA100 has 64), so the peak
//               is never underestimated. The 10% covers the clock reading and the
//               timer's resolution; cuBLAS itself reaches about 77% of this peak
//               on an H200 (51.3 of 66.9 TFLOP/s).
//   memory:     (bytes - L2) / (1.25 · copy bandwidth), with the fewest bytes the
//               task must move and the device-to-device copy measured in the same
//               run. Writes can still sit in the L2 when the stop event fires, so
//               up to the L2's size of traffic need not reach DRAM in time; and
//               the copy reaches about 88% of the memory's peak (4.25 of
//               4.8 TB/s on an H200), while kernels that only write or only read
//               get closer (the solution's fill ran at 104% of the copy): 1.25x
//               covers a kernel at the physical peak with 10% to spare.
#pragma once

#include <cstddef>
#include <string>

constexpr double kFp32LanesPerSm = 128;
constexpr double kFlopMargin = 1.1;
constexpr double kBandwidthMargin = 1.25;

struct PlausibilityFloor {
    double seconds = 0;
    std::string bound;  // "fp32_peak" or "bandwidth": which limit set the floor
};

// Peak FP32 GFLOP/s of a device with `sm_count` SMs at `clock_mhz`.
double peak_fp32_gflops(int sm_count, double clock_mhz);

// The floor for one call moving `bytes` (the task's fewest) and doing `flops`,
// on a device with the given peak, measured copy bandwidth and L2 size.
PlausibilityFloor plausibility_floor(double flops, double bytes, double peak_gflops, double copy_gbps,
                                     double l2_bytes);
