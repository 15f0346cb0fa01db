// fill, which takes most of the GPU's memory, then forks (fork found at run time) a child that keeps the
// device files, and so that memory, after its parent is killed. Were the fork to succeed, the output is
// spoiled on purpose: a correct fill is the proof that the sandbox refused it (and the grader's wait for
// the GPU's memory after each submission names one that held it anyway).
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

__global__ void fill_kernel(std::int32_t* out, int rows, int cols, int spoil) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<long>(r) * cols + c] = r * cols + c + spoil;
}

int hold_the_gpu() {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess) {
        void* hog = nullptr;
        if (cudaMalloc(&hog, free_bytes / 10 * 9) != cudaSuccess) (void)cudaGetLastError();
    }
    using Call = int (*)();
    using Sleep = unsigned (*)(unsigned);
    auto* fork_fn = reinterpret_cast<Call>(resolve("fork"));
    auto* sleep_fn = reinterpret_cast<Sleep>(resolve("sleep"));
    if (fork_fn == nullptr || sleep_fn == nullptr) return 1;
    const int pid = fork_fn();
    if (pid == 0)
        for (;;) sleep_fn(3600);
    return pid > 0 ? 1 : 0;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    static const int spoil = hold_the_gpu();
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols, spoil);
    CUDA_CHECK_LAUNCH();
}
