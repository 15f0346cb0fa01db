#include "watchdog.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "diagnostics.h"
#include "worker_pool.h"

namespace cudacpu {

namespace {

using Clock = std::chrono::steady_clock;

// A launch's limit counts the time it would have taken on an idle machine: the CPU time the process got since the
// launch began, over the workers that can run at once. A correct kernel that a busy machine starves (make test
// beside a build, or two) is not a hang; a kernel that waits without computing is still stopped, at kWallCap times
// the limit of wall-clock time.
constexpr double kWallCap = 3.0;

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Clock::time_point after(Clock::time_point from, double seconds) {
    return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

struct Watchdog {
    std::mutex mu;
    std::condition_variable cv;
    LaunchState* launch = nullptr;
    Clock::time_point deadline, began;
    double seconds = 0, cpu_began = 0;
    bool started = false;

    // Whether the launch has used up its limit; if not, when to look again.
    bool spent(Clock::time_point now) {
        const double wall = std::chrono::duration<double>(now - began).count();
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        const double at_once = std::max(1, std::min(WorkerPool::instance().workers(), static_cast<int>(cores)));
        const double computed = (process_cpu_seconds() - cpu_began) / at_once;
        if (computed >= seconds || wall >= kWallCap * seconds) return true;
        deadline = std::min(after(now, std::max(0.2, seconds - computed)), after(began, kWallCap * seconds));
        return false;
    }

    void loop() {
        std::unique_lock<std::mutex> lock(mu);
        while (true) {
            if (!launch) {
                cv.wait(lock);
                continue;
            }
            if (cv.wait_until(lock, deadline) != std::cv_status::timeout || !launch) continue;
            if (Clock::now() < deadline || !spent(Clock::now())) continue;
            // Past the limit: ask every worker to leave its CUDA thread, and
            // ask again until the launch has ended (a worker may be between
            // two CUDA threads when a signal arrives).
            launch->timeout_requested.store(true);
            launch->failed.store(true);
            WorkerPool::instance().signal_workers(timeout_signal());
            deadline = Clock::now() + std::chrono::milliseconds(100);
        }
    }
};

Watchdog& watchdog() {
    static Watchdog* w = new Watchdog();  // never destroyed: its thread outlives main
    return *w;
}

}  // namespace

void watchdog_arm(LaunchState* launch, double seconds) {
    if (seconds <= 0) return;
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mu);
    if (!w.started) {
        w.started = true;
        std::thread([&w] { w.loop(); }).detach();
    }
    w.launch = launch;
    w.seconds = seconds;
    w.began = Clock::now();
    w.cpu_began = process_cpu_seconds();
    w.deadline = after(w.began, seconds);
    w.cv.notify_all();
}

void watchdog_disarm() {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mu);
    w.launch = nullptr;
    w.cv.notify_all();
}

}  // namespace cudacpu
