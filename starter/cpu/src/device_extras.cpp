// The device functions that need the runtime: clock64, __nanosleep, __trap,
// and assert() inside a kernel.
#include <errno.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "block_runner.h"

namespace cudacpu {
namespace detail {

long long clock_ticks() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void sleep_nanoseconds(unsigned ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

void trap(Site site) {
    BlockRunner* r = current_runner();
    if (r && r->in_thread())
        r->fail_from_thread(cudaErrorLaunchFailure,
                            r->launch()->describe() + ": " + r->running_thread() + " called __trap() at " + where(site));
    std::fprintf(stderr, "cudacpu: __trap() called at %s outside a kernel\n", where(site).c_str());
    std::abort();
}

}  // namespace detail
}  // namespace cudacpu

// assert() in a kernel: a failed assertion ends the launch with
// cudaErrorAssert (as a GPU's device-side assert does) and says which thread
// failed it. Outside kernels it behaves as the C library's: message, then
// abort(). glibc's assert() calls __assert_fail, Apple's __assert_rtn.
namespace {

[[noreturn]] void assertion_failed(const char* assertion, const char* file, unsigned int line, const char* function) {
    cudacpu::BlockRunner* r = cudacpu::current_runner();
    if (r && r->in_thread())
        r->fail_from_thread(cudaErrorAssert, r->launch()->describe() + ": " + r->running_thread() +
                                                 " failed assert(" + assertion + ") at " +
                                                 cudacpu::where(cudacpu::Site{file, static_cast<int>(line)}) +
                                                 " in " + function);
#if defined(__APPLE__)
    const char* program = getprogname();
#else
    const char* program = program_invocation_short_name;
#endif
    std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program, file, line, function, assertion);
    std::abort();
}

}  // namespace

#if defined(__APPLE__)
extern "C" [[noreturn]] void __assert_rtn(const char* function, const char* file, int line, const char* assertion) {
    assertion_failed(assertion, file, static_cast<unsigned int>(line), function);
}
#else
extern "C" [[noreturn]] void __assert_fail(const char* assertion, const char* file, unsigned int line,
                                           const char* function) noexcept {
    assertion_failed(assertion, file, line, function);
}
#endif
