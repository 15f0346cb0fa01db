#include "shared_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "launch_state.h"
#include "sanitizer_hooks.h"

namespace cudacpu {

namespace {

constexpr std::size_t kRedzone = 64;                 // bytes after each variable (at least)
constexpr std::size_t kStaticLimit = 48 * 1024;      // static __shared__ per block, as ptxas allows
constexpr std::size_t kCapacity = 512 * 1024;        // 227 KiB dynamic + 48 KiB static + redzones

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// "[32][33]" for a variable of that shape.
std::string dims(const detail::SharedVarInfo& info) {
    std::string s;
    for (int i = 0; i < info.rank && i < 4; ++i) s += "[" + std::to_string(info.extents[i]) + "]";
    return s;
}

// The subscripts of flat element `index` of the variable: "[1][0]".
std::string subscripts(const detail::SharedVarInfo& info, long long index) {
    if (info.rank <= 1) return "[" + std::to_string(index) + "]";
    long long stride = 1;
    for (int i = 1; i < info.rank && i < 4; ++i) stride *= static_cast<long long>(info.extents[i]);
    std::string s;
    long long rest = index;
    for (int i = 0; i < info.rank && i < 4; ++i) {
        // Floor division, so that an index before the start reads [-1][32] and not [0][-1].
        long long q = rest / stride;
        if (rest % stride != 0 && (rest < 0) != (stride < 0)) --q;
        s += "[" + std::to_string(q) + "]";
        rest -= q * stride;
        if (i + 1 < info.rank && i + 1 < 4) stride /= static_cast<long long>(info.extents[i + 1]);
    }
    return s;
}

}  // namespace

void fill_garbage(void* p, std::size_t n) {
    auto* bytes = static_cast<unsigned char*>(p);
    const unsigned pattern = kSharedGarbage;
    std::size_t i = 0;
    const std::size_t words = n / 4;
    auto* w = reinterpret_cast<unsigned*>(bytes);
    if (reinterpret_cast<std::uintptr_t>(bytes) % 4 == 0) {
        for (; i < words; ++i) w[i] = pattern;
        i *= 4;
    }
    for (; i < n; ++i) bytes[i] = static_cast<unsigned char>(pattern >> (8 * (i % 4)));
}

SharedArena::SharedArena() : capacity_(kCapacity) {
    void* mem = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::fprintf(stderr, "cudacpu: cannot allocate shared memory for a worker\n");
        std::abort();
    }
    base_ = static_cast<char*>(mem);
    // Unused shared memory is out of bounds: only what a block allocates becomes addressable.
    asan_poison(base_, capacity_);
}

SharedArena::~SharedArena() {
    asan_unpoison(base_, capacity_);
    munmap(base_, capacity_);
}

void SharedArena::begin_block(std::size_t dynamic_bytes) {
    // Poison what the last block used beyond the new dynamic part; the
    // dynamic part itself becomes addressable garbage.
    const std::size_t dyn_end = align_up(dynamic_bytes, 16);
    if (high_water_ > dyn_end) asan_poison(base_ + dyn_end, high_water_ - dyn_end);
    asan_unpoison(base_, dynamic_bytes);
    if (dynamic_bytes % 8) asan_poison(base_ + dynamic_bytes, dyn_end + kRedzone - dynamic_bytes);
    else asan_poison(base_ + dynamic_bytes, kRedzone);
    fill_garbage(base_, dynamic_bytes);
    dynamic_bytes_ = dynamic_bytes;
    cursor_ = dyn_end + kRedzone;
    high_water_ = cursor_;
    static_bytes_ = 0;
    vars_.clear();
    dynamic_name_ = nullptr;
}

void* SharedArena::get(const void* key, const detail::SharedVarInfo& info, std::size_t limit, std::string* why) {
    for (const Var& v : vars_)
        if (v.key == key) return v.ptr;
    const std::size_t align = info.align < 16 ? 16 : info.align;
    if (static_bytes_ + info.bytes > kStaticLimit) {
        *why = "declares " + std::to_string(static_bytes_ + info.bytes) +
               " bytes of static __shared__ memory (at " + where(info.site) +
               "); a GPU allows 48 KiB (49152 bytes) per block, and nvcc would refuse to compile it: "
               "use dynamic shared memory (extern __shared__) and cudaFuncSetAttribute for more";
        return nullptr;
    }
    if (static_bytes_ + info.bytes + dynamic_bytes_ > limit) {
        *why = "uses " + std::to_string(static_bytes_ + info.bytes) + " bytes of static and " +
               std::to_string(dynamic_bytes_) + " bytes of dynamic shared memory, more than the " +
               std::to_string(limit) + " bytes this kernel may use per block" +
               (limit < 232448 ? " (raise it with cudaFuncSetAttribute(kernel, "
                                 "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes))"
                               : "");
        return nullptr;
    }
    const std::size_t offset = align_up(cursor_, align);
    if (offset + info.bytes + kRedzone > capacity_) {
        *why = "uses more shared memory than the CPU backend has room for";
        return nullptr;
    }
    char* p = base_ + offset;
    asan_unpoison(p, info.bytes);
    fill_garbage(p, info.bytes);
    cursor_ = offset + info.bytes + kRedzone;
    if (cursor_ > high_water_) high_water_ = cursor_;
    static_bytes_ += info.bytes;
    vars_.push_back(Var{key, p, info});
    return p;
}

bool SharedArena::contains(const void* addr) const {
    const char* a = static_cast<const char*>(addr);
    return a >= base_ && a < base_ + capacity_;
}

void SharedArena::note_dynamic(const char* name, Site site, std::size_t element_bytes) {
    if (dynamic_name_ == name) return;
    dynamic_name_ = name;
    dynamic_site_ = site;
    dynamic_element_bytes_ = element_bytes ? element_bytes : 1;
}

std::string SharedArena::describe_access(const void* addr, std::size_t size) const {
    const char* a = static_cast<const char*>(addr);
    // The variable whose extent, widened by the redzones, holds the address; the nearest if several.
    const Var* best = nullptr;
    long long best_distance = 0;
    for (const Var& v : vars_) {
        const long long start = v.ptr - base_, end = start + static_cast<long long>(v.info.bytes);
        const long long at = a - base_;
        const long long distance = at < start ? start - at : (at >= end ? at - end + 1 : 0);
        if (distance <= static_cast<long long>(kRedzone) && (!best || distance < best_distance)) {
            best = &v;
            best_distance = distance;
        }
    }
    if (best) {
        const detail::SharedVarInfo& info = best->info;
        const long long index = (a - best->ptr) >= 0 ? (a - best->ptr) / static_cast<long long>(info.element_bytes)
                                                     : -((best->ptr - a + static_cast<long long>(info.element_bytes) - 1) /
                                                         static_cast<long long>(info.element_bytes));
        const std::size_t elements = info.bytes / info.element_bytes;
        std::string type = info.element_type ? info.element_type : (std::to_string(info.element_bytes) + "-byte");
        return std::string(info.name) + subscripts(info, index) + " (element " + std::to_string(index) + "), but " +
               "__shared__ " + type + " " + info.name + dims(info) + " has " + std::to_string(elements) +
               " element" + (elements == 1 ? "" : "s") + " (declared at " + where(info.site) + ")";
    }
    const long long at = a - base_;
    if (at >= 0 && at < static_cast<long long>(dynamic_bytes_ + kRedzone)) {
        const char* name = dynamic_name_ ? dynamic_name_ : "dynamic shared memory";
        const long long index = at / static_cast<long long>(dynamic_element_bytes_);
        const std::size_t elements = dynamic_bytes_ / dynamic_element_bytes_;
        return std::string(name) + "[" + std::to_string(index) + "], but the launch gave " +
               std::to_string(dynamic_bytes_) + " bytes of dynamic shared memory (" + std::to_string(elements) +
               " element" + (elements == 1 ? "" : "s") + ")";
    }
    (void)size;
    return "";
}

}  // namespace cudacpu
