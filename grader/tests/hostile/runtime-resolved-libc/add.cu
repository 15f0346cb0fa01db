// add, with C library functions the gate's symbol check cannot see: socket() and fork() are found by
// name at run time (resolve(), below: no symbol for them in the object), then called through pointers.
// Were either to succeed, the output is spoiled on purpose: a correct add is the proof that the sandbox's
// filter refused them.
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

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long n, int spoil) {
    const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + static_cast<T>(spoil);
}

int escaped() {
    using Socket = int (*)(int, int, int);
    using Fork = int (*)();
    using Exit = void (*)(int);
    auto* socket_fn = reinterpret_cast<Socket>(resolve("socket"));
    auto* fork_fn = reinterpret_cast<Fork>(resolve("fork"));
    auto* exit_fn = reinterpret_cast<Exit>(resolve("_exit"));
    if (socket_fn == nullptr || fork_fn == nullptr || exit_fn == nullptr) return 1;  // unresolved: spoil too
    const int fd = socket_fn(2, 1, 0);                                                 // AF_INET, SOCK_STREAM
    const int pid = fork_fn();
    if (pid == 0) exit_fn(0);
    return fd >= 0 || pid > 0 ? 1 : 0;
}

}  // namespace

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    static const int spoil = escaped();
    const long n = static_cast<long>(rows) * cols;
    add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n, spoil);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
