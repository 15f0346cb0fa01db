// How the running CUDA thread hands the CPU to the next one: the path every
// barrier and warp collective takes, inline in the files that use it.
#pragma once

#include "block_runner.h"

namespace cudacpu {

inline int BlockRunner::next_runnable() {
    if (queue_empty() || block_failed_ || launch_->failed.load(std::memory_order_relaxed)) return -1;
    return queue_[queue_head_++ & queue_mask_];
}

inline void BlockRunner::after_switch() {
    if (__builtin_expect(has_finished_stack_, 0)) {
        stacks_.give_back(finished_stack_, false);
        has_finished_stack_ = false;
    }
}

inline void BlockRunner::transfer(Context* from, int to, bool from_finished) {
    CudaThread& th = threads_[to];
    if (__builtin_expect(!th.has_stack, 0)) give_stack(to);
    th.state = State::kRunning;
    running_ = to;
    threadIdx = th.index;
    switch_context(from, &th.context, &th.stack, from_finished);
    after_switch();
}

inline void BlockRunner::to_scheduler(Context* from, bool from_finished) {
    running_ = -1;
    switch_context(from, &scheduler_, nullptr, from_finished);
    after_switch();
}

inline void BlockRunner::park() {
    const int me = running_;
    const int next = next_runnable();
    if (next == me) {
        threads_[me].state = State::kRunning;
        return;
    }
    if (next < 0) to_scheduler(&threads_[me].context, false);
    else transfer(&threads_[me].context, next, false);
}

}  // namespace cudacpu
