#include "watchdog.h"

#include <cstdio>
#include <cstdlib>

Watchdog::Watchdog(double seconds, int exit_code, std::function<void(const std::string&, double)> on_timeout)
    : seconds_(seconds), exit_code_(exit_code), on_timeout_(std::move(on_timeout)), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Watchdog::arm(const std::string& label) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        armed_ = true;
        label_ = label;
        deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds_));
    }
    cv_.notify_all();
}

void Watchdog::disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
}

void Watchdog::watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
        if (!armed_) {
            cv_.wait(lock);
            continue;
        }
        if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stopping_ &&
            std::chrono::steady_clock::now() >= deadline_) {
            on_timeout_(label_, seconds_);
            std::fflush(nullptr);
            std::_Exit(exit_code_);
        }
    }
}
