// The hostile corpus's run-time resolver (the block between the markers is the same text in
// runtime-resolved-libc, detached-background, fork-holds-gpu and background-thread-gpu), on the CPU:
// it finds fork, setsid, socket and pthread_create with no symbol for them in the object, and calls
// each. Prints one line per call: "name resolved result errno".
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

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
}  // namespace

int main() {
    using Fork = int (*)();
    using Setsid = int (*)();
    using Socket = int (*)(int, int, int);
    using Create = int (*)(void*, const void*, void* (*)(void*), void*);
    auto* fork_fn = reinterpret_cast<Fork>(resolve("fork"));
    auto* setsid_fn = reinterpret_cast<Setsid>(resolve("setsid"));
    auto* socket_fn = reinterpret_cast<Socket>(resolve("socket"));
    auto* create_fn = reinterpret_cast<Create>(resolve("pthread_create"));
    errno = 0;
    long pid = fork_fn ? fork_fn() : -2;
    if (pid == 0) _exit(0);
    std::printf("fork %d %ld %d\n", fork_fn != nullptr, pid, errno);
    errno = 0;
    long sid = setsid_fn ? setsid_fn() : -2;
    std::printf("setsid %d %ld %d\n", setsid_fn != nullptr, sid, errno);
    errno = 0;
    int fd = socket_fn ? socket_fn(2, 1, 0) : -2;
    std::printf("socket %d %d %d\n", socket_fn != nullptr, fd, errno);
    unsigned long thread = 0;
    int made = create_fn ? create_fn(&thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr) : -2;
    std::printf("pthread_create %d %d 0\n", create_fn != nullptr, made);
    return 0;
}
