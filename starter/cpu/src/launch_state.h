// One kernel launch, as the workers that run its blocks share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "../include/cudacpu/kernel_prelude.h"
#include "schedule.h"

namespace cudacpu {

struct LaunchState {
    LaunchSite site;
    detail::KernelIdentity id;
    dim3 grid, block;
    std::size_t dynamic_shared_bytes = 0;
    std::size_t shared_limit = 0;  // static + dynamic bytes the kernel may use
    detail::ThreadEntry entry = nullptr;
    void* context = nullptr;
    Schedule schedule;
    std::uint64_t block_count = 0;
    int threads_per_block = 0;
    bool profiled = false;  // counted by the performance counters (profile.h) instead of race-checked

    std::atomic<std::uint64_t> next_block{0};
    std::atomic<bool> failed{false};
    // Set by the watchdog when the launch has run past its time limit.
    std::atomic<bool> timeout_requested{false};
    double timeout_seconds = 0;

    // The kernel's name for messages: the prologue's, else the launch text.
    std::string kernel_name() const;
    // "kernel add_kernel (launched at add.cu:31)".
    std::string describe() const;

    // Records the first failure of the launch (later ones are counted only)
    // and tells every worker to stop.
    void fail(cudaError_t e, const std::string& message);
    cudaError_t error() const;
    std::string message() const;

private:
    mutable std::mutex mu_;
    cudaError_t error_ = cudaSuccess;
    std::string message_;
};

// "(x,y,z)"
std::string coords(uint3 v);
std::string coords(dim3 v);
// "file.cu:12" with the directory left out, or "an unknown place".
std::string where(Site s);
bool same_site(Site a, Site b);
// "0x0000ffff", as masks are written.
std::string hex(unsigned v);

}  // namespace cudacpu
