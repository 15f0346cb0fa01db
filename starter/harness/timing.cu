#include "timing.h"

#include <chrono>

#include "cuda_check.h"

namespace {

__global__ void flush_kernel(unsigned* data, std::size_t words) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x)
        data[i] = data[i] * 1664525u + 1013904223u;  // read and write every line
}

class Event {
public:
    Event() { CUDA_CHECK(cudaEventCreate(&e_)); }
    ~Event() { (void)cudaEventDestroy(e_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return e_; }

private:
    cudaEvent_t e_{};
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int TimingResult::throttled_samples() const {
    int n = 0;
    for (bool t : throttled) n += t;
    return n;
}

void TimingResult::append(const TimingResult& more) {
    samples_ms.insert(samples_ms.end(), more.samples_ms.begin(), more.samples_ms.end());
    sm_mhz.insert(sm_mhz.end(), more.sm_mhz.begin(), more.sm_mhz.end());
    throttled.insert(throttled.end(), more.throttled.begin(), more.throttled.end());
    outside_stream_samples += more.outside_stream_samples;
    stats = summarize(samples_ms);
    converged = more.converged;
    stop_reason = more.stop_reason;
    wall_seconds += more.wall_seconds;
}

#ifdef CUDACPU_BACKEND
// The CPU backend has no L2 to flush (and times need a GPU): the flusher holds nothing.
L2Flusher::L2Flusher() {}
void L2Flusher::flush() {}
#else
L2Flusher::L2Flusher() {
    int device = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    const std::size_t bytes = 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (8 << 20));
    buffer_ = DeviceBuffer(bytes);
    CUDA_CHECK(cudaMemset(buffer_.get(), 0, bytes));
}

void L2Flusher::flush() {
    // Lines a launcher marked persisting would survive an ordinary flush.
    CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    const std::size_t words = buffer_.bytes() / sizeof(unsigned);
    flush_kernel<<<1024, 256>>>(buffer_.as<unsigned>(), words);
    CUDA_CHECK(cudaGetLastError());
}
#endif

TimingResult time_launcher(const std::function<void()>& launcher, const std::function<void()>& prepare,
                           const std::function<void(int)>& verify, const TimingOptions& o, L2Flusher& flusher,
                           const DeviceInfo* device) {
    const auto t0 = Clock::now();
    const auto elapsed = [&] { return ms_since(t0) * 1e-3; };

    Event start, stop;
    TimingResult r;
    // One run; returns its time and counts work that outlived the stop event.
    auto one_run = [&](int index) {
        prepare();
        flusher.flush();
        CUDA_CHECK(cudaEventRecord(start.get(), 0));
        launcher();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop.get(), 0));
        CUDA_CHECK(cudaEventSynchronize(stop.get()));
        // Device-wide: whatever the launcher queued on a stream the stop event
        // did not wait for is still running here, and the wait is its time.
        const auto synced_at = Clock::now();
        CUDA_CHECK(cudaDeviceSynchronize());
        const double outside_ms = ms_since(synced_at);
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        double sample = ms;
        if (outside_ms > kOutsideStreamAllowanceMs) {
            sample += outside_ms;
            if (index >= 0) ++r.outside_stream_samples;
        }
        if (index >= 0) {
            const ClockReading clock = device ? read_clock(*device) : ClockReading{};
            r.sm_mhz.push_back(clock.sm_mhz);
            r.throttled.push_back(clock.throttled);
        }
        verify(index);
        return sample;
    };

    for (int i = 0; i < o.warmup_runs; ++i) one_run(-1 - i);

    while (true) {
        r.samples_ms.push_back(one_run(static_cast<int>(r.samples_ms.size())));
        const int n = static_cast<int>(r.samples_ms.size());
        const double spent = elapsed();
        if (n >= o.min_samples) {
            r.stats = summarize(r.samples_ms);
            if (r.stats.relative_ci() <= o.target_relative_ci) { r.converged = true; r.stop_reason = "converged"; break; }
        }
        if (n >= o.max_samples) { r.stop_reason = "max_samples"; break; }
        if (n >= 3 && spent >= o.budget_seconds) { r.stop_reason = "budget"; break; }
        if (spent >= 4 * o.budget_seconds) { r.stop_reason = "hard_budget"; break; }
    }
    r.stats = summarize(r.samples_ms);
    r.wall_seconds = elapsed();
    return r;
}
