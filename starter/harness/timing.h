// Timing one call of a launcher.
//
// Each sample: prepare() (outside the timed region: place the inputs, poison
// the output), flush the L2 cache (rewrite a buffer twice its size, read off
// the device, and drop any persisting-L2 lines), then
//     record start event -> launcher -> record stop event -> wait for stop
//     -> cudaDeviceSynchronize (device-wide)
// on the default stream, then verify(i) (every sample's output is checked,
// not only the first). The sample is the time between the events, plus any
// time the device-wide synchronize still had to wait: work the launcher left
// running on another stream, which the stop event would not have waited for,
// is counted (more than kOutsideStreamAllowanceMs of it; below that it is the
// synchronize's own cost). The default stream is the legacy one, which waits
// for every blocking stream, including the per-thread default stream. Warm-up
// runs come first and are checked too. After each sample the SM clock is read
// and the sample marked when the clock was throttled.
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
#include "device_info.h"
#include "stats.h"

// Host-side wait of the closing device-wide synchronize above which the wait
// counts as the launcher's work (an idle device answers within a few µs).
constexpr double kOutsideStreamAllowanceMs = 0.02;

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
    std::vector<int> sm_mhz;           // per sample: the SM clock right after it (-1: unknown)
    std::vector<bool> throttled;       // per sample: taken while the SM clock was throttled
    int outside_stream_samples = 0;    // samples whose launcher left work running past the stop event
    bool converged = false;
    std::string stop_reason;  // "converged", "max_samples", "budget", "hard_budget"
    double wall_seconds = 0;

    int throttled_samples() const;
    void append(const TimingResult& more);  // samples of a later call, in order
};

class L2Flusher {
public:
    L2Flusher();  // sized from the current device's L2
    void flush();
    std::size_t bytes() const { return buffer_.bytes(); }

private:
    DeviceBuffer buffer_;
};

// `device` (may be null) is where the clock is read after each sample.
TimingResult time_launcher(const std::function<void()>& launcher, const std::function<void()>& prepare,
                           const std::function<void(int sample)>& verify, const TimingOptions& options,
                           L2Flusher& flusher, const DeviceInfo* device = nullptr);
