#include "worker_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>

#include "diagnostics.h"
#include "runtime_config.h"

namespace cudacpu {

WorkerPool& WorkerPool::instance() {
    // Never destroyed: worker threads may still sleep in it when the program exits.
    static WorkerPool* pool = new WorkerPool();
    return *pool;
}

WorkerPool::WorkerPool() {
    int n = available_cpus();
    if (const char* env = std::getenv("CUDA_CPU_WORKERS")) {
        const int v = std::atoi(env);
        if (v >= 1) n = v;
    }
    workers_ = n;
    runners_.push_back(std::make_unique<BlockRunner>());
    running_on_.push_back(pthread_t{});
    busy_.push_back(false);
}

int WorkerPool::workers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return workers_;
}

void WorkerPool::set_workers(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    workers_ = n < 1 ? 1 : n;
}

void WorkerPool::grow_to(int n) {
    while (static_cast<int>(runners_.size()) < n) {
        const int index = static_cast<int>(runners_.size());
        runners_.push_back(std::make_unique<BlockRunner>());
        running_on_.push_back(pthread_t{});
        busy_.push_back(false);
        threads_.emplace_back([this, index] { worker_loop(index); });
        threads_.back().detach();
    }
}

void WorkerPool::worker_loop(int index) {
    ensure_signal_stack();
    unsigned long long seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        // Only as many helpers as the launch asked for take part.
        if (index > helpers_wanted_ || !launch_) continue;
        LaunchState* launch = launch_;
        running_on_[index] = pthread_self();
        busy_[index] = true;
        lock.unlock();
        runners_[index]->run_blocks(*launch);
        lock.lock();
        busy_[index] = false;
        ++helpers_done_;
        finished_.notify_all();
    }
}

void WorkerPool::run(LaunchState& launch) {
    ensure_signal_stack();
    int helpers = 0;
    {
        std::unique_lock<std::mutex> lock(mu_);
        const std::uint64_t useful = launch.block_count > 0 ? launch.block_count - 1 : 0;
        helpers = static_cast<int>(std::min<std::uint64_t>(useful, static_cast<std::uint64_t>(workers_ - 1)));
        grow_to(helpers + 1);
        launch_ = &launch;
        helpers_wanted_ = helpers;
        helpers_done_ = 0;
        running_on_[0] = pthread_self();
        busy_[0] = true;
        if (helpers > 0) {
            ++generation_;
            wake_.notify_all();
        }
    }
    runners_[0]->run_blocks(launch);
    std::unique_lock<std::mutex> lock(mu_);
    busy_[0] = false;
    finished_.wait(lock, [&] { return helpers_done_ == helpers; });
    launch_ = nullptr;
}

void WorkerPool::signal_workers(int signal) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < busy_.size(); ++i)
        if (busy_[i]) pthread_kill(running_on_[i], signal);
}

}  // namespace cudacpu
