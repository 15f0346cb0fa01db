// The worker threads that run a launch's blocks. The launching thread is
// worker 0 and runs blocks too; the others wait between launches. Each
// worker takes the next block from the launch's counter, so blocks spread
// over the CPUs however long each takes.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "block_runner.h"
#include "launch_state.h"

namespace cudacpu {

class WorkerPool {
public:
    static WorkerPool& instance();

    // Runs every block of `launch`; returns when all are done (or the launch failed).
    void run(LaunchState& launch);
    // Sends `signal` to every worker running `launch` (the watchdog's stop request).
    void signal_workers(int signal);
    int workers() const;
    void set_workers(int n);

private:
    WorkerPool();
    void worker_loop(int index);
    void grow_to(int n);

    mutable std::mutex mu_;
    std::condition_variable wake_, finished_;
    std::vector<std::unique_ptr<BlockRunner>> runners_;  // runners_[0]: the launching thread's
    std::vector<std::thread> threads_;                   // threads_[i - 1] runs runners_[i]
    std::vector<pthread_t> running_on_;                  // the thread of each runner busy with the launch
    std::vector<bool> busy_;
    LaunchState* launch_ = nullptr;
    unsigned long long generation_ = 0;
    int helpers_wanted_ = 0, helpers_done_ = 0;
    int workers_ = 1;
};

}  // namespace cudacpu
