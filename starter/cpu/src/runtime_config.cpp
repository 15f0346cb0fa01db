#include "runtime_config.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "sanitizer_hooks.h"

namespace cudacpu {

const RuntimeConfig& config() {
    static const RuntimeConfig c = [] {
        RuntimeConfig r;
        // AddressSanitizer's redzones make stack frames several times larger.
        std::size_t kb = asan_active() ? 256 : 64;
        if (const char* env = std::getenv("CUDA_CPU_STACK_KB")) {
            const long v = std::atol(env);
            if (v >= 16) kb = static_cast<std::size_t>(v);
        }
        r.stack_bytes = kb * 1024;
        return r;
    }();
    return c;
}

int available_cpus() {
#if defined(__linux__)  // (macOS has no affinity masks: every CPU is available)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace cudacpu
