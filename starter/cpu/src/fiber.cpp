#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sanitizer_hooks.h"

#if !defined(CUDACPU_USE_UCONTEXT)
extern "C" void cudacpu_switch_context(cudacpu::Context* from, const cudacpu::Context* to);
extern "C" void cudacpu_fiber_trampoline();
#endif

namespace cudacpu {

namespace {

// The stack of the worker thread itself (its scheduler), as AddressSanitizer
// reported it on the last switch into a fiber.
thread_local ThreadStackBounds t_thread_stack;

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

#if defined(CUDACPU_USE_UCONTEXT)
void ucontext_entry(unsigned hi_fn, unsigned lo_fn, unsigned hi_arg, unsigned lo_arg) {
    auto join = [](unsigned hi, unsigned lo) { return (std::uintptr_t(hi) << 32) | lo; };
    auto entry = reinterpret_cast<void (*)(void*)>(join(hi_fn, lo_fn));
    entry(reinterpret_cast<void*>(join(hi_arg, lo_arg)));
    std::abort();  // entry switches away for good
}
#endif

}  // namespace

bool Stack::contains_guard(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    return a >= base - page_size() && a < base;
}

void init_context(Context* ctx, const Stack& stack, void (*entry)(void*), void* arg) {
#if defined(CUDACPU_USE_UCONTEXT)
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack.base;
    ctx->uc.uc_stack.ss_size = stack.size;
    ctx->uc.uc_link = nullptr;
    const auto fn = reinterpret_cast<std::uintptr_t>(entry), a = reinterpret_cast<std::uintptr_t>(arg);
    makecontext(&ctx->uc, reinterpret_cast<void (*)()>(ucontext_entry), 4, unsigned(fn >> 32), unsigned(fn),
                unsigned(a >> 32), unsigned(a));
#elif defined(__x86_64__)
    // The frame cudacpu_switch_context pops: r15, r14, r13 (arg), r12 (entry),
    // rbx, rbp, then the return address: the trampoline. After the pops and
    // the ret the stack pointer is 16-byte aligned, as a call needs.
    auto* top = reinterpret_cast<std::uintptr_t*>((reinterpret_cast<std::uintptr_t>(stack.base + stack.size)) & ~std::uintptr_t(15));
    std::uintptr_t* sp = top - 7;
    sp[0] = 0;                                              // r15
    sp[1] = 0;                                              // r14
    sp[2] = reinterpret_cast<std::uintptr_t>(arg);          // r13
    sp[3] = reinterpret_cast<std::uintptr_t>(entry);        // r12
    sp[4] = 0;                                              // rbx
    sp[5] = 0;                                              // rbp
    sp[6] = reinterpret_cast<std::uintptr_t>(&cudacpu_fiber_trampoline);
    ctx->sp = sp;
#elif defined(__aarch64__)
    // The 160-byte frame cudacpu_switch_context restores: x19 (entry), x20
    // (arg), ..., x29 = 0, x30 = the trampoline, d8-d15.
    auto* top = reinterpret_cast<std::uintptr_t*>((reinterpret_cast<std::uintptr_t>(stack.base + stack.size)) & ~std::uintptr_t(15));
    std::uintptr_t* sp = top - 20;
    std::memset(sp, 0, 20 * sizeof(std::uintptr_t));
    sp[0] = reinterpret_cast<std::uintptr_t>(entry);        // x19
    sp[1] = reinterpret_cast<std::uintptr_t>(arg);          // x20
    sp[11] = reinterpret_cast<std::uintptr_t>(&cudacpu_fiber_trampoline);  // x30
    ctx->sp = sp;
#endif
}

void switch_context(Context* from, const Context* to, const Stack* to_stack, bool from_finished) {
    void* fake_stack = nullptr;
    if (__sanitizer_start_switch_fiber) {
        const void* bottom = to_stack ? to_stack->base : t_thread_stack.bottom;
        const std::size_t size = to_stack ? to_stack->size : t_thread_stack.size;
        __sanitizer_start_switch_fiber(from_finished ? nullptr : &fake_stack, bottom, size);
    }
#if defined(CUDACPU_USE_UCONTEXT)
    swapcontext(&from->uc, &to->uc);
#else
    cudacpu_switch_context(from, to);
#endif
    // Resumed. Switches into a fiber always come from the thread's own stack:
    // remember it, for the switch back.
    if (__sanitizer_finish_switch_fiber) {
        const void* bottom = nullptr;
        std::size_t size = 0;
        __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
        if (to_stack == nullptr && bottom) t_thread_stack = {bottom, size};
    }
}

void finish_switch() {
    if (!__sanitizer_finish_switch_fiber) return;
    const void* bottom = nullptr;
    std::size_t size = 0;
    __sanitizer_finish_switch_fiber(nullptr, &bottom, &size);
    if (bottom) t_thread_stack = {bottom, size};
}

StackPool::StackPool(std::size_t stack_bytes)
    : stack_bytes_((stack_bytes + page_size() - 1) / page_size() * page_size()) {}

StackPool::~StackPool() {
    for (const Stack& s : all_) munmap(s.base - page_size(), s.size + page_size());
}

Stack StackPool::take() {
    if (!free_.empty()) {
        Stack s = free_.back();
        free_.pop_back();
        return s;
    }
    const std::size_t guard = page_size();
    void* mem = mmap(nullptr, stack_bytes_ + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (mem == MAP_FAILED) {
        std::fprintf(stderr, "cudacpu: out of memory for thread stacks (%zu KiB each)\n", stack_bytes_ / 1024);
        std::abort();
    }
    mprotect(mem, guard, PROT_NONE);
    Stack s{static_cast<char*>(mem) + guard, stack_bytes_};
    all_.push_back(s);
    return s;
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
