#include "schedule.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "../include/cudacpu/extension.h"

namespace cudacpu {

namespace {

std::uint64_t mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::mutex g_mutex;
Schedule g_schedule;
std::string g_description = "default";
bool g_initialized = false;

void initialize_locked() {
    if (g_initialized) return;
    g_initialized = true;
    if (const char* env = std::getenv("CUDA_CPU_SCHEDULE")) {
        Schedule s;
        if (Schedule::parse(env, &s)) {
            g_schedule = s;
            g_description = s.describe();
        } else {
            std::fprintf(stderr, "cudacpu: CUDA_CPU_SCHEDULE=%s is not a schedule (default, reverse or random:SEED); "
                                 "using default\n", env);
        }
    }
}

}  // namespace

bool Schedule::parse(const std::string& spec, Schedule* out) {
    if (spec == "default" || spec.empty()) {
        *out = Schedule{};
        return true;
    }
    if (spec == "reverse") {
        *out = Schedule{kReverse, 0};
        return true;
    }
    if (spec.rfind("random:", 0) == 0 && spec.size() > 7) {
        char* end = nullptr;
        const unsigned long long seed = std::strtoull(spec.c_str() + 7, &end, 10);
        if (*end != '\0') return false;
        *out = Schedule{kRandom, seed};
        return true;
    }
    return false;
}

std::string Schedule::describe() const {
    switch (kind) {
        case kDefault: return "default";
        case kReverse: return "reverse";
        case kRandom: return "random:" + std::to_string(seed);
    }
    return "default";
}

void Schedule::arrange(int* ids, int n, std::uint64_t block, std::uint64_t event) const {
    if (kind == kDefault || n < 2) return;
    if (kind == kReverse) {
        for (int i = 0, j = n - 1; i < j; ++i, --j) std::swap(ids[i], ids[j]);
        return;
    }
    std::uint64_t state = mix(seed ^ mix(block * 0x100000001B3ull + event));
    for (int i = n - 1; i > 0; --i) {
        state = mix(state);
        const int j = static_cast<int>(state % static_cast<std::uint64_t>(i + 1));
        std::swap(ids[i], ids[j]);
    }
}

std::uint64_t Schedule::block_at(std::uint64_t i, std::uint64_t count) const {
    if (kind == kDefault || count < 2) return i;
    if (kind == kReverse) return count - 1 - i;
    // An affine map i -> (a i + c) mod count is a permutation when a and
    // count have no common factor.
    std::uint64_t a = mix(seed ^ 0xB10C) % count, c = mix(seed ^ 0xC0DE) % count;
    auto gcd = [](std::uint64_t x, std::uint64_t y) {
        while (y) {
            const std::uint64_t t = x % y;
            x = y;
            y = t;
        }
        return x;
    };
    while (a == 0 || gcd(a, count) != 1) a = (a + 1) % count;
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * i + c) % count);
}

Schedule current_schedule() {
    std::lock_guard<std::mutex> lock(g_mutex);
    initialize_locked();
    return g_schedule;
}

}  // namespace cudacpu

extern "C" int cudacpu_set_schedule(const char* spec) {
    cudacpu::Schedule s;
    if (!spec || !cudacpu::Schedule::parse(spec, &s)) return -1;
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    cudacpu::initialize_locked();
    cudacpu::g_schedule = s;
    cudacpu::g_description = s.describe();
    return 0;
}

extern "C" const char* cudacpu_schedule(void) {
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    cudacpu::initialize_locked();
    return cudacpu::g_description.c_str();
}
