#include "watchdog.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "diagnostics.h"
#include "worker_pool.h"

namespace cudacpu {

namespace {

using Clock = std::chrono::steady_clock;

struct Watchdog {
    std::mutex mu;
    std::condition_variable cv;
    LaunchState* launch = nullptr;
    Clock::time_point deadline;
    bool started = false;

    void loop() {
        std::unique_lock<std::mutex> lock(mu);
        while (true) {
            if (!launch) {
                cv.wait(lock);
                continue;
            }
            if (cv.wait_until(lock, deadline) != std::cv_status::timeout || !launch) continue;
            if (Clock::now() < deadline) continue;
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
    w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    w.cv.notify_all();
}

void watchdog_disarm() {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mu);
    w.launch = nullptr;
    w.cv.notify_all();
}

}  // namespace cudacpu
