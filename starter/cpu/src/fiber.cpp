#include "fiber.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sanitizer_hooks.h"

namespace cudacpu {

namespace {


std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

#if defined(CUDACPU_FIBERS_BOOST)
// A fiber's first run: save the context that started it, as every switch does, then call its entry.
void fcontext_entry(boost::context::detail::transfer_t t) {
    auto* handoff = static_cast<Handoff*>(t.data);
    handoff->from->fctx = t.fctx;
    handoff->to->entry(handoff->to->arg);
    std::abort();  // entry switches away for good
}
#else
void ucontext_entry(unsigned hi_fn, unsigned lo_fn, unsigned hi_arg, unsigned lo_arg) {
    auto join = [](unsigned hi, unsigned lo) { return (std::uintptr_t(hi) << 32) | lo; };
    auto entry = reinterpret_cast<void (*)(void*)>(join(hi_fn, lo_fn));
    entry(reinterpret_cast<void*>(join(hi_arg, lo_arg)));
    std::abort();  // entry switches away for good
}
#endif

}  // namespace

// The stack of the worker thread itself (its scheduler), for AddressSanitizer.
ThreadStackBounds thread_stack() {
    static thread_local ThreadStackBounds bounds = [] {
        ThreadStackBounds b;
#if defined(__APPLE__)
        // Darwin gives the top of the stack (the highest address) and its size.
        const std::size_t size = pthread_get_stacksize_np(pthread_self());
        b = {static_cast<const char*>(pthread_get_stackaddr_np(pthread_self())) - size, size};
#else
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void* addr = nullptr;
            std::size_t size = 0;
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) b = {addr, size};
            pthread_attr_destroy(&attr);
        }
#endif
        return b;
    }();
    return bounds;
}

bool Stack::contains_guard(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    return a >= base - page_size() && a < base;
}

void init_context(Context* ctx, const Stack& stack, void (*entry)(void*), void* arg) {
#if defined(CUDACPU_FIBERS_BOOST)
    // make_fcontext takes the top of the stack (stacks grow down on every platform Boost.Context has).
    const std::size_t usable = stack.size - stack.color;
    ctx->fctx = boost::context::detail::make_fcontext(stack.base + usable, usable, &fcontext_entry);
    ctx->entry = entry;
    ctx->arg = arg;
#else
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack.base;
    ctx->uc.uc_stack.ss_size = stack.size - stack.color;
    ctx->uc.uc_link = nullptr;
    const auto fn = reinterpret_cast<std::uintptr_t>(entry), a = reinterpret_cast<std::uintptr_t>(arg);
    makecontext(&ctx->uc, reinterpret_cast<void (*)()>(ucontext_entry), 4, unsigned(fn >> 32), unsigned(fn),
                unsigned(a >> 32), unsigned(a));
    // AddressSanitizer's swapcontext clears the shadow of the whole stack it switches to, at every switch
    // (microseconds with 256 KiB stacks, and the stack's redzones are lost); switch_context already tells it
    // about the switch. The C library reads uc_stack only in makecontext.
    ctx->uc.uc_stack = stack_t{};
#endif
}

void finish_switch() {
    if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
}

StackPool::StackPool(std::size_t stack_bytes)
    : stack_bytes_((stack_bytes + page_size() - 1) / page_size() * page_size()) {}

StackPool::~StackPool() {
    // The mappings stay: a pool lives as long as its worker, which is the process.
}

Stack StackPool::take() {
    if (!free_.empty()) {
        Stack s = free_.back();
        free_.pop_back();
        return s;
    }
    // Stacks come 32 at a time from one mapping, each above its guard page.
    const std::size_t guard = page_size();
    const std::size_t stride = stack_bytes_ + guard, count = 32;
    void* mem = mmap(nullptr, stride * count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        std::fprintf(stderr, "cudacpu: out of memory for thread stacks (%zu KiB each)\n", stack_bytes_ / 1024);
        std::abort();
    }
    for (std::size_t i = 0; i < count; ++i) {
        char* at = static_cast<char*>(mem) + i * stride;
        mprotect(at, guard, PROT_NONE);
        // Tops spread over 4 KiB in steps of 5 cache lines (see Stack::color).
        const std::size_t color = (all_.size() * 5 % 64) * 64;
        Stack s{at + guard, stack_bytes_, color};
        all_.push_back(s);
        free_.push_back(s);
    }
    return take();
}

void StackPool::give_back(const Stack& s, bool dirty) {
    if (dirty) asan_unpoison(s.base, s.size);
    free_.push_back(s);
}

bool StackPool::is_guard_page(const void* addr) const {
    for (const Stack& s : all_)
        if (s.contains_guard(addr)) return true;
    return false;
}

}  // namespace cudacpu
