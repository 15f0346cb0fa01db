// Timing one call of a launcher.
//
// Each sample: prepare() (outside the timed region: poison the output), flush
// the L2 cache (rewrite a buffer twice its size, read off the device, and
// drop any persisting-L2 lines), then
//     record start event -> launcher -> record stop event -> cudaDeviceSynchronize
// all on the default stream, then verify(i) (every sample's output is checked,
// not only the first). Warm-up runs come first and are checked too.
//
// Sampling stops at the first of:
//   * at least min_samples and the 95% CI half-width of the median within
//     target_relative_ci of it ("converged");
//   * max_samples;
//   * the per-case budget spent, once there are at least 3 samples;
//   * four times the budget spent, whatever the count (very slow kernels).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "stats.h"

struct TimingOptions {
    double budget_seconds = 1.0;
    int warmup_runs = 2;
    int min_samples = 10;
    int max_samples = 1000;
    double target_relative_ci = 0.01;
};

struct TimingResult {
    SampleStats stats;
    std::vector<double> samples_ms;
    bool converged = false;
    std::string stop_reason;  // "converged", "max_samples", "budget", "hard_budget"
    double wall_seconds = 0;
};

class L2Flusher {
public:
    L2Flusher();  // sized from the current device's L2
    void flush();
    std::size_t bytes() const { return buffer_.bytes(); }

private:
    DeviceBuffer buffer_;
};

TimingResult time_launcher(const std::function<void()>& launcher, const std::function<void()>& prepare,
                           const std::function<void(int sample)>& verify, const TimingOptions& options,
                           L2Flusher& flusher);
