#include "diagnostics.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#include <sys/ucontext.h>  // (<ucontext.h> is the deprecated switching API there)
#else
#include <ucontext.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>

#include "block_runner.h"
#include "memory.h"
#include "sanitizer_hooks.h"

namespace cudacpu {

namespace {

std::mutex g_mutex;
std::string g_last;
std::atomic<int> g_quiet{-1};  // -1: not read from the environment yet

struct sigaction g_previous[NSIG];

bool quiet() {
    int q = g_quiet.load();
    if (q < 0) {
        const char* env = std::getenv("CUDA_CPU_QUIET");
        q = env && *env && std::strcmp(env, "0") != 0;
        int expected = -1;
        g_quiet.compare_exchange_strong(expected, q);
        q = g_quiet.load();
    }
    return q == 1;
}

const void* context_pc(void* uc_void) {
    auto* uc = static_cast<ucontext_t*>(uc_void);
#if defined(__APPLE__) && defined(__x86_64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext->__ss.__rip);
#elif defined(__APPLE__) && defined(__aarch64__)
    return reinterpret_cast<const void*>(__darwin_arm_thread_state64_get_pc(uc->uc_mcontext->__ss));
#elif defined(__x86_64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.pc);
#else
    (void)uc;
    return nullptr;
#endif
}

const void* context_sp(void* uc_void) {
    auto* uc = static_cast<ucontext_t*>(uc_void);
#if defined(__APPLE__) && defined(__x86_64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext->__ss.__rsp);
#elif defined(__APPLE__) && defined(__aarch64__)
    return reinterpret_cast<const void*>(__darwin_arm_thread_state64_get_sp(uc->uc_mcontext->__ss));
#elif defined(__x86_64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.sp);
#else
    (void)uc;
    return nullptr;
#endif
}

// Whether a frame "file:line" belongs to the runtime rather than to the student.
bool runtime_frame(const std::string& frame) {
    return frame.find("/cudacpu/") != std::string::npos || frame.find("cuda_runtime.h") != std::string::npos ||
           frame.find("/starter/cpu/src/") != std::string::npos || frame.rfind("??", 0) == 0 ||
           frame.find("/usr/include/") != std::string::npos;
}

// Hands a signal that is not a kernel's to the handler installed before ours.
void chain(int sig, siginfo_t* info, void* uc) {
    const struct sigaction& old = g_previous[sig];
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
        old.sa_sigaction(sig, info, uc);
        return;
    }
    if (old.sa_handler == SIG_IGN) return;
    if (old.sa_handler != SIG_DFL && old.sa_handler) {
        old.sa_handler(sig);
        return;
    }
    // Default action: restore it and let the instruction fault again.
    signal(sig, SIG_DFL);
}

void on_fault(int sig, siginfo_t* info, void* uc) {
    BlockRunner* r = current_runner();
    if (r && r->in_thread() && r->launch() &&
        (r->on_thread_stack(context_sp(uc)) || r->is_stack_guard(info->si_addr)))
        r->abandon_from_signal(sig, info->si_addr, context_pc(uc));
    chain(sig, info, uc);
}

void on_timeout(int sig, siginfo_t*, void* uc) {
    BlockRunner* r = current_runner();
    if (r && r->in_thread() && r->launch() && r->launch()->timeout_requested.load() && r->on_thread_stack(context_sp(uc)))
        r->abandon_from_signal(sig, nullptr, context_pc(uc));
}

// A local array's name from AddressSanitizer's stack report: "'acc' (line 12) <== Memory access ...".
std::string stack_variable(const char* report) {
    static const std::regex pattern(R"(\[\d+, \d+\) '([^']+)'[^\n]*<== Memory access)");
    std::cmatch m;
    if (std::regex_search(report, m, pattern)) return m[1].str();
    return "";
}

void on_asan_report(const char* report) {
    BlockRunner* r = current_runner();
    if (!r || !r->in_thread() || !r->launch()) {
        // Not in a kernel: the program's own bug. Print ASan's report and stop, as ASan would.
        if (report) (void)!write(2, report, std::strlen(report));
        std::abort();
    }
    if (r->launch()->failed.load()) return;  // the launch already has its report
    const void* address = __asan_get_report_address ? __asan_get_report_address() : nullptr;
    const bool write = __asan_get_report_access_type && __asan_get_report_access_type() != 0;
    const std::size_t size = __asan_get_report_access_size ? __asan_get_report_access_size() : 0;
    const void* pc = __asan_get_report_pc ? __asan_get_report_pc() : nullptr;
    const char* kind = __asan_get_report_description ? __asan_get_report_description() : "bad access";
    std::string what;
    if (r->arena().contains(address)) what = r->arena().describe_access(address, size);
    if (what.empty()) what = describe_device_address(address);
    if (what.empty() && report && std::strstr(report, "stack-buffer")) {
        const std::string var = stack_variable(report);
        what = var.empty() ? "outside a local array" : "outside its local array " + var;
    }
    if (what.empty()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%zu bytes at %p", size, address);
        what = std::string(buf) + " (" + kind + ")";
    }
    const std::string at = symbolize(pc, false);
    const std::string message = r->launch()->describe() + " " + (write ? "wrote " : "read ") + what + " (" +
                                r->running_thread() + (at.empty() ? "" : ", " + at) + ")";
    r->fail_soon(cudaErrorIllegalAddress, message);
    if (const char* env = std::getenv("CUDA_CPU_ASAN_REPORTS"); env && std::strcmp(env, "1") == 0 && report)
        (void)!::write(2, report, std::strlen(report));
}

std::string addr2line(const void* pc) {
    Dl_info info{};
    if (!dladdr(pc, &info) || !info.dli_fbase) return "";
    std::string object = info.dli_fname ? info.dli_fname : "";
    if (object.empty() || object[0] != '/') {
        // The main program: its path as this process sees it (the shell popen runs would see its own).
        char path[4096];
#if defined(__APPLE__)
        std::uint32_t size = sizeof path;
        if (_NSGetExecutablePath(path, &size) != 0) return "";
        object = path;
#else
        const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0) return "";
        object.assign(path, static_cast<std::size_t>(n));
#endif
    }
    char command[1024];
    std::snprintf(command, sizeof command, "addr2line -i -e '%s' 0x%lx 2>/dev/null", object.c_str(),
                  static_cast<unsigned long>(static_cast<const char*>(pc) - static_cast<const char*>(info.dli_fbase)));
    FILE* p = popen(command, "r");
    if (!p) return "";
    char line[2048];
    std::string found;
    while (std::fgets(line, sizeof line, p)) {
        std::string frame(line);
        while (!frame.empty() && (frame.back() == '\n' || frame.back() == '\r')) frame.pop_back();
        const auto paren = frame.find(" (discriminator");
        if (paren != std::string::npos) frame.erase(paren);
        if (found.empty() && !runtime_frame(frame) && frame.find(":0") == std::string::npos) found = frame;
    }
    pclose(p);
    return found;
}

std::string basename_frame(const std::string& frame) {
    const auto slash = frame.rfind('/');
    return slash == std::string::npos ? frame : frame.substr(slash + 1);
}

}  // namespace

void report_diagnostic(const std::string& message) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_last = message;
    }
    if (!quiet()) std::fprintf(stderr, "cudacpu: %s\n", message.c_str());
}

#if defined(SIGRTMIN)
int timeout_signal() { return SIGRTMIN + 4; }
#else
int timeout_signal() { return SIGUSR2; }  // macOS has no real-time signals
#endif

void install_fault_handlers() {
    // Checked at every launch: a program (or a test framework) may have put
    // its own handler in since; ours goes back in front and hands it the
    // faults that are not a kernel's.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
        struct sigaction current {};
        sigaction(sig, nullptr, &current);
        if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault) continue;
        struct sigaction sa {};
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, &g_previous[sig]);
    }
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction timeout {};
        timeout.sa_sigaction = on_timeout;
        timeout.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        sigemptyset(&timeout.sa_mask);
        sigaction(timeout_signal(), &timeout, nullptr);
        if (__asan_set_error_report_callback) {
            __asan_set_error_report_callback(on_asan_report);
            // Our own message replaces AddressSanitizer's report (CUDA_CPU_ASAN_REPORTS=1 shows both).
            if (__sanitizer_set_report_fd) {
                static const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (devnull >= 0) __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<intptr_t>(devnull)));
            }
        }
    });
}

void ensure_signal_stack() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE) && current.ss_size >= 65536) return;
    constexpr std::size_t kBytes = 256 * 1024;
    stack_t s{};
    s.ss_sp = std::malloc(kBytes);  // kept for the thread's lifetime
    s.ss_size = kBytes;
    s.ss_flags = 0;
    if (s.ss_sp) sigaltstack(&s, nullptr);
}

namespace {

// A frame with a known line of the student's code ("k.cu:12"), not "k.cu:0" or "k.cu:?".
bool useful_frame(const std::string& f) {
    if (runtime_frame(f)) return false;
    const auto colon = f.rfind(':');
    return colon != std::string::npos && colon + 1 < f.size() && f[colon + 1] >= '1' && f[colon + 1] <= '9';
}

// The line of one code address, or "".
std::string symbolize_once(const void* pc, bool exact) {
    if (__sanitizer_symbolize_pc) {
        // The sanitizers take every address for a return address and look
        // one byte back: an exact one is handed over one byte ahead.
        char buf[4096] = {};
        __sanitizer_symbolize_pc(const_cast<char*>(static_cast<const char*>(pc) + (exact ? 1 : 0)), "%s:%l", buf,
                                 sizeof buf);
        // Inlined frames come innermost first, each ending in a NUL.
        for (const char* frame = buf; *frame && frame < buf + sizeof buf; frame += std::strlen(frame) + 1)
            if (useful_frame(frame)) return basename_frame(frame);
        // clang's runtime asks an llvm-symbolizer process, which can fail: try addr2line.
    }
    const std::string f = addr2line(exact ? pc : static_cast<const char*>(pc) - 1);
    return useful_frame(f) ? basename_frame(f) : "";
}

}  // namespace

std::string symbolize(const void* pc, bool exact) {
    if (!pc) return "";
    // Code a compiler adds (AddressSanitizer's checks at -O0, say) may have
    // no line of its own: the nearest instruction before it that has one
    // belongs to the same statement.
    for (int back = 0; back < 48; ++back) {
        const std::string at = symbolize_once(static_cast<const char*>(pc) - back, exact || back > 0);
        if (!at.empty()) return at;
    }
    return "";
}

std::string describe_fault(const LaunchState& launch, const std::string& thread, int signal, const void* address,
                           const void* pc, bool stack_overflow, std::size_t stack_bytes) {
    const std::string at = symbolize(pc, true);
    const std::string place = at.empty() ? "" : " at " + at;
    if (signal == timeout_signal()) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", launch.timeout_seconds);
        return launch.describe() + " did not finish within " + seconds +
               " s (the launch time limit, counted in the time it computed: a busy machine's waits do not count) "
               "and was stopped: " +
               thread + " was still running" + place +
               ". Look for a loop that never ends, or a thread waiting for something another block never does. "
               "(cudacpu_set_launch_timeout or CUDA_CPU_LAUNCH_TIMEOUT change the limit.)";
    }
    if (stack_overflow)
        return launch.describe() + ": " + thread + " overflowed its " + std::to_string(stack_bytes / 1024) +
               " KiB stack" + place +
               " (large local arrays or deep recursion; CUDA_CPU_STACK_KB gives each CUDA thread more).";
    if (signal == SIGFPE)
        return launch.describe() + ": " + thread + " divided an integer by zero" + place +
               " (a GPU gives an undefined result instead of stopping).";
    if (signal == SIGILL)
        return launch.describe() + ": " + thread + " executed an illegal instruction" + place +
               " (unreachable code was reached?)";
    std::string what = describe_device_address(address);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", address);
    return launch.describe() + ": " + thread + " accessed address " + buf +
           (what.empty() ? ", which is not device memory" : " (" + what + ")") + place +
           ". On a GPU this is an illegal memory access.";
}

}  // namespace cudacpu

extern "C" {

const char* cudacpu_last_diagnostic(void) {
    // Kept per process; a copy per call would need freeing, so callers read it before the next launch.
    static thread_local std::string copy;
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    copy = cudacpu::g_last;
    return copy.c_str();
}

void cudacpu_clear_diagnostic(void) {
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    cudacpu::g_last.clear();
}

void cudacpu_set_quiet(int quiet) { cudacpu::g_quiet.store(quiet ? 1 : 0); }

int cudacpu_checking_memory(void) { return cudacpu::asan_active() ? 1 : 0; }

// AddressSanitizer's defaults for programs built with the CPU backend: keep
// going after a report in a kernel (the runtime stops the launch and turns
// the report into a CUDA error); report every launch's bad access, not only
// the first time a line goes wrong (a harness runs one kernel on many
// shapes); no leak report at exit (device memory a program never frees is
// no bug on a GPU); let cudaMalloc fail with cudaErrorMemoryAllocation
// instead of aborting. ASAN_OPTIONS overrides them.
const char* __asan_default_options() {
    return "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0:allow_user_segv_handler=1:"
           "allocator_may_return_null=1:detect_stack_use_after_return=0";
}
}
