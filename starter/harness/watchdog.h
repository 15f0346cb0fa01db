// A wall-clock limit per case. A kernel that never finishes blocks the CUDA
// call waiting for it forever; the watchdog thread notices, reports which case
// hung, and ends the process (the GPU frees the context when it exits).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

class Watchdog {
public:
    // on_timeout(case label, seconds) runs on the watchdog thread; the process
    // then exits with `exit_code`.
    Watchdog(double seconds, int exit_code, std::function<void(const std::string&, double)> on_timeout);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    void arm(const std::string& label);  // start the clock for one case
    void disarm();

private:
    void watch();

    double seconds_;
    int exit_code_;
    std::function<void(const std::string&, double)> on_timeout_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool armed_ = false, stopping_ = false;
    std::string label_;
    std::chrono::steady_clock::time_point deadline_;
    std::thread thread_;
};
