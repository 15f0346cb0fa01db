// Fibers: the execution contexts CUDA threads run in.
//
// Each CUDA thread of a block runs on a fiber of the worker that runs the
// block. A fiber runs until it reaches a barrier or a warp collective, or
// returns; then it switches back to the worker's scheduler.
//
// The switch is Boost.Context's (its fcontext layer: jump_fcontext and
// make_fcontext, the maintained assembly under Boost's own fibers and
// coroutines, for every platform a student has: x86-64 and Arm, ELF and
// Mach-O). cpu.mk defines CUDACPU_FIBERS_BOOST when it finds Boost.Context;
// without it (Linux only) the C library's <ucontext.h> switches, 5-8 times
// slower per barrier (README.md, "Speed").
// We keep allocating the stacks ourselves, each above a guard page.
//
// The fcontext layer rather than boost::context::fiber: a fiber object that
// is destroyed unfinished unwinds its stack, and ours never finish (a CUDA
// thread's fiber goes straight on to the next thread, or is abandoned when a
// kernel faults), and fiber's resume() is asymmetric while CUDA threads hand
// the CPU to each other directly. Folly's fibers use the same layer.
#pragma once

#include <cstddef>
#include <vector>

#if defined(CUDACPU_FIBERS_BOOST)
#include <boost/context/detail/fcontext.hpp>
#else
#include <ucontext.h>
#endif

namespace cudacpu {

// A saved execution context.
struct Context {
#if defined(CUDACPU_FIBERS_BOOST)
    boost::context::detail::fcontext_t fctx = nullptr;
    // Until the fiber first runs: what it calls.
    void (*entry)(void*) = nullptr;
    void* arg = nullptr;
#else
    ucontext_t uc{};
#endif
};

// A fiber's stack with an inaccessible guard page below it, so that an
// overflow faults at once instead of corrupting the next stack.
struct Stack {
    char* base = nullptr;  // lowest usable address
    std::size_t size = 0;  // usable bytes above base
    // Bytes left unused at the top. Stacks are page-aligned, so without it
    // every fiber's hot top would fall into the same few cache sets, and a
    // block of 1024 fibers would miss the cache at every switch.
    std::size_t color = 0;
    bool contains_guard(const void* addr) const;
};

// Prepares `ctx` so that switching to it calls entry(arg) on `stack`.
// entry must never return: it ends by switching away for good.
void init_context(Context* ctx, const Stack& stack, void (*entry)(void*), void* arg);

// Saves the running context in `from` and resumes `to`. `to_stack` is the
// stack `to` runs on (for AddressSanitizer; null for the thread's own stack);
// `from_finished` says the running context will never be resumed.
inline void switch_context(Context* from, const Context* to, const Stack* to_stack, bool from_finished = false);

// Called first thing on a fiber's stack, and after every switch_context
// returns, to finish AddressSanitizer's bookkeeping of the switch.
void finish_switch();

// Where the calling thread's own stack lies (AddressSanitizer needs it to
// switch back to it).
struct ThreadStackBounds {
    const void* bottom = nullptr;
    std::size_t size = 0;
};
ThreadStackBounds thread_stack();

// Stacks of one worker, reused from block to block: a stack goes back to the
// pool as soon as its CUDA thread returns, so a block without barriers runs
// all its threads on one stack.
class StackPool {
public:
    explicit StackPool(std::size_t stack_bytes);
    ~StackPool();
    StackPool(const StackPool&) = delete;
    StackPool& operator=(const StackPool&) = delete;

    Stack take();
    // `dirty`: the fiber was abandoned mid-run; its ASan stack poisoning is cleared.
    void give_back(const Stack& s, bool dirty);
    std::size_t stack_bytes() const { return stack_bytes_; }
    // The stack whose guard page holds `addr`, if any (for the overflow message).
    bool is_guard_page(const void* addr) const;

private:
    std::size_t stack_bytes_;
    std::vector<Stack> free_;
    std::vector<Stack> all_;
};

}  // namespace cudacpu

// --- switch_context, inline: it is on every barrier's path ------------------------------
#include "sanitizer_hooks.h"

namespace cudacpu {

#if defined(CUDACPU_FIBERS_BOOST)
// What a switch hands the context it resumes: where to save the one it left
// (jump_fcontext gives the resumed side the left one's handle, not the left
// side), and, for a fiber's first run, the context it starts as.
struct Handoff {
    Context* from;
    const Context* to;
};
#endif

inline void switch_context(Context* from, const Context* to, const Stack* to_stack, bool from_finished) {
    void* fake_stack = nullptr;
    if (__sanitizer_start_switch_fiber) {
        const ThreadStackBounds own = to_stack ? ThreadStackBounds{} : thread_stack();
        __sanitizer_start_switch_fiber(from_finished ? nullptr : &fake_stack, to_stack ? to_stack->base : own.bottom,
                                       to_stack ? to_stack->size : own.size);
    }
#if defined(CUDACPU_FIBERS_BOOST)
    Handoff handoff{from, to};
    const boost::context::detail::transfer_t back = boost::context::detail::jump_fcontext(to->fctx, &handoff);
    // Resumed, by whichever context switched back to this one: save it where it asked.
    static_cast<Handoff*>(back.data)->from->fctx = back.fctx;
#else
    swapcontext(&from->uc, &to->uc);
#endif
    if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}

}  // namespace cudacpu
