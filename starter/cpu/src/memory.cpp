#include "memory.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "diagnostics.h"
#include "errors.h"
#include "sanitizer_hooks.h"

namespace cudacpu {

namespace {

enum class Kind { kDevice, kManaged, kPinned, kRegisteredHost, kSymbol };

constexpr std::size_t kAlign = 256;   // cudaMalloc's alignment

struct NamedArray {
    std::string name;
    std::uintptr_t start;
    std::size_t elements, element_size;
};

struct Allocation {
    std::uintptr_t start;  // what the program sees
    std::size_t bytes;
    Kind kind;
    void* raw;             // what munmap() takes (nullptr: not ours to free)
    std::size_t guard;     // poisoned (or inaccessible) bytes before start and after the end
    std::size_t mapped = 0;  // bytes mapped at raw
    std::uintptr_t valid_start = 0, valid_end = 0;  // cudacpu_set_valid_range, else 0
    std::vector<NamedArray> names;

    std::uintptr_t end() const { return start + bytes; }
};

std::shared_mutex g_mutex;
std::map<std::uintptr_t, Allocation> g_allocations;  // by start

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::kDevice: return "device";
        case Kind::kManaged: return "managed";
        case Kind::kPinned: return "page-locked host";
        case Kind::kRegisteredHost: return "registered host";
        case Kind::kSymbol: return "__device__ variable";
    }
    return "device";
}

// The allocation holding [p, p + n) (n = 0: holding p or ending at p). Caller holds the lock.
const Allocation* find_locked(std::uintptr_t p, std::size_t n = 0) {
    auto it = g_allocations.upper_bound(p);
    if (it == g_allocations.begin()) return nullptr;
    --it;
    const Allocation& a = it->second;
    if (p >= a.start && p + n <= a.end() && (n > 0 || p <= a.end())) return &a;
    return nullptr;
}

Allocation* find_mutable_locked(std::uintptr_t p) { return const_cast<Allocation*>(find_locked(p)); }

// Poisons the parts of `a` outside its valid range (none if it has none).
void apply_valid_range(const Allocation& a) {
    if (!a.valid_end) return;
    asan_poison(reinterpret_cast<void*>(a.start), a.valid_start - a.start);
    asan_unpoison(reinterpret_cast<void*>(a.valid_start), a.valid_end - a.valid_start);
    asan_poison(reinterpret_cast<void*>(a.valid_end), a.end() - a.valid_end);
}

cudaError_t allocate(void** out, std::size_t size, Kind kind) {
    if (!out) return record(cudaErrorInvalidValue);
    if (const cudaError_t sticky = sticky_error()) return sticky;
    *out = nullptr;
    if (size == 0) return cudaSuccess;
    const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
    if (rounded < size || rounded > (std::size_t(1) << 46)) return record(cudaErrorMemoryAllocation);
    Allocation a{0, size, kind, nullptr, 0, 0, 0, 0, {}};
    // Mapped, not taken from the heap: a GPU's cudaMalloc of many gigabytes takes milliseconds, and so does a
    // mapping (MAP_NORESERVE: pages come when touched). AddressSanitizer's allocator would spend about a
    // second per 10 GB clearing its shadow, time a student's case would be charged for. The array ends
    // (within 255 bytes) where its last page ends, with a guard page on each side.
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t span = (rounded + page - 1) / page * page;
    a.mapped = span + 2 * page;
    a.raw = mmap(nullptr, a.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a.raw == MAP_FAILED) return record(cudaErrorMemoryAllocation);
    char* base = static_cast<char*>(a.raw);
    a.guard = page;
    a.start = reinterpret_cast<std::uintptr_t>(base + page + span - rounded);
    if (asan_active()) {
        // Poisoned, not inaccessible: AddressSanitizer then reports the first byte a kernel touches outside
        // the array, even within the 255 bytes of rounding, and names the array.
        asan_poison(base, a.start - reinterpret_cast<std::uintptr_t>(base));
        asan_poison(reinterpret_cast<void*>(a.start + size), a.mapped - (a.start - reinterpret_cast<std::uintptr_t>(base)) - size);
    } else {
        // A kernel running past either end faults at once (reported as an illegal address).
        mprotect(base, page, PROT_NONE);
        mprotect(base + page + span, page, PROT_NONE);
    }
    const auto start = a.start;
    {
        std::unique_lock<std::shared_mutex> lock(g_mutex);
        g_allocations[start] = a;
    }
    *out = reinterpret_cast<void*>(start);
    return cudaSuccess;
}

// Unmaps `a`, first clearing what was poisoned in it (its guards and rounding, and outside its valid range), so
// that whatever is mapped there next starts clean: only those bytes, as clearing all of a large array's shadow
// would cost what mapping it saved.
void free_raw(const Allocation& a) {
    if (asan_active()) {
        const auto base = reinterpret_cast<std::uintptr_t>(a.raw);
        const std::uintptr_t tail = a.start + a.bytes / 8 * 8;
        asan_unpoison(a.raw, a.start - base);
        asan_unpoison(reinterpret_cast<void*>(tail), base + a.mapped - tail);
        if (a.valid_end) asan_unpoison(reinterpret_cast<void*>(a.start), a.bytes);
    }
    munmap(a.raw, a.mapped);
}

cudaError_t release(void* p, bool host) {
    if (!p) return cudaSuccess;
    if (const cudaError_t sticky = sticky_error()) return sticky;
    Allocation a;
    {
        std::unique_lock<std::shared_mutex> lock(g_mutex);
        auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(p));
        const bool host_kind = it != g_allocations.end() && it->second.kind == Kind::kPinned;
        if (it == g_allocations.end() || !it->second.raw || host_kind != host) return record(cudaErrorInvalidValue);
        a = it->second;
        g_allocations.erase(it);
    }
    free_raw(a);
    return cudaSuccess;
}

// Checks that [p, p + n) lies in device-accessible memory; explains why not.
bool device_range_ok(const void* p, std::size_t n, const char* call, const char* side) {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    if (find_locked(addr, n)) return true;
    const Allocation* holder = find_locked(addr);
    std::string why;
    if (holder)
        why = std::string(call) + ": the " + side + " range of " + std::to_string(n) + " bytes at offset " +
              std::to_string(addr - holder->start) + " runs past the end of its " + std::to_string(holder->bytes) +
              "-byte " + kind_name(holder->kind) + " allocation";
    else
        why = std::string(call) + ": the " + side + " pointer " + std::to_string(addr) +
              " is not device memory (a host pointer, or memory already freed?)";
    lock.unlock();
    report_diagnostic(why + " (cudaErrorInvalidValue)");
    return false;
}

bool is_device_side(const void* p) {
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    const Allocation* a = find_locked(reinterpret_cast<std::uintptr_t>(p));
    return a && a->kind != Kind::kRegisteredHost;
}

// Copies with AddressSanitizer's view of valid ranges lifted for the copy:
// cudacpu_set_valid_range() guards against kernels, not against cudaMemcpy.
void raw_copy(void* dst, const void* src, std::size_t n) {
    if (!asan_active()) {
        std::memmove(dst, src, n);
        return;
    }
    std::vector<Allocation> touched;
    {
        std::shared_lock<std::shared_mutex> lock(g_mutex);
        for (const void* p : {static_cast<const void*>(dst), src})
            if (const Allocation* a = find_locked(reinterpret_cast<std::uintptr_t>(p)))
                if (a->valid_end) touched.push_back(*a);
    }
    for (const Allocation& a : touched) asan_unpoison(reinterpret_cast<void*>(a.start), a.bytes);
    std::memmove(dst, src, n);
    for (const Allocation& a : touched) apply_valid_range(a);
}

}  // namespace

bool kernel_accessible(const void* p) {
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    return find_locked(reinterpret_cast<std::uintptr_t>(p)) != nullptr;
}

std::string describe_device_address(const void* addr) {
    const auto p = reinterpret_cast<std::uintptr_t>(addr);
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    // The allocation nearest below the address (or the first one above, for an underrun).
    const Allocation* a = nullptr;
    auto it = g_allocations.upper_bound(p);
    if (it != g_allocations.begin()) a = &std::prev(it)->second;
    if ((!a || p >= a->end() + a->guard) && it != g_allocations.end() && it->second.start - p <= it->second.guard)
        a = &it->second;
    // Farther than this from every allocation, an address is not described
    // relative to one: it may belong to anything.
    constexpr std::uintptr_t kNear = 1 << 20;
    if (!a || p >= a->end() + a->guard + kNear || p + kNear < a->start) return "";
    // A named array in it: the one holding the address, else the nearest.
    const NamedArray* best = nullptr;
    std::uintptr_t best_distance = 0;
    for (const NamedArray& n : a->names) {
        const std::uintptr_t end = n.start + n.elements * n.element_size;
        const std::uintptr_t d = p < n.start ? n.start - p : (p >= end ? p - end + 1 : 0);
        if (!best || d < best_distance) {
            best = &n;
            best_distance = d;
        }
    }
    if (best) {
        const long long offset = static_cast<long long>(p) - static_cast<long long>(best->start);
        const long long size = static_cast<long long>(best->element_size);
        const long long index = offset >= 0 ? offset / size : -((-offset + size - 1) / size);
        return best->name + "[" + std::to_string(index) + "] but " + best->name + " has " +
               std::to_string(best->elements) + " element" + (best->elements == 1 ? "" : "s");
    }
    if (p >= a->end())
        return "byte " + std::to_string(p - a->start) + " of a " + std::to_string(a->bytes) + "-byte " +
               kind_name(a->kind) + " allocation: " + std::to_string(p - a->end()) + " bytes past its end";
    if (p < a->start)
        return std::to_string(a->start - p) + " bytes before the start of a " + std::to_string(a->bytes) + "-byte " +
               kind_name(a->kind) + " allocation";
    return "byte " + std::to_string(p - a->start) + " of a " + std::to_string(a->bytes) + "-byte " +
           kind_name(a->kind) + " allocation, outside the part in use";
}

cudaError_t checked_copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, const char* call) {
    if (const cudaError_t sticky = sticky_error()) return sticky;
    if (count == 0) return cudaSuccess;
    if (!dst || !src) return record(cudaErrorInvalidValue);
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return record(cudaErrorInvalidMemcpyDirection);
    const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (dst_device && !device_range_ok(dst, count, call, "destination")) return record(cudaErrorInvalidValue);
    if (src_device && !device_range_ok(src, count, call, "source")) return record(cudaErrorInvalidValue);
    if (kind == cudaMemcpyDefault) {
        if (is_device_side(dst) && !device_range_ok(dst, count, call, "destination")) return record(cudaErrorInvalidValue);
        if (is_device_side(src) && !device_range_ok(src, count, call, "source")) return record(cudaErrorInvalidValue);
    }
    raw_copy(dst, src, count);
    return cudaSuccess;
}

cudaError_t checked_set(void* dst, int value, std::size_t count, const char* call) {
    if (const cudaError_t sticky = sticky_error()) return sticky;
    if (count == 0) return cudaSuccess;
    if (!dst || !device_range_ok(dst, count, call, "destination")) return record(cudaErrorInvalidValue);
    std::vector<unsigned char> pattern;
    if (asan_active()) {
        // Through raw_copy, which lifts valid-range poisoning for the write.
        pattern.assign(count, static_cast<unsigned char>(value));
        raw_copy(dst, pattern.data(), count);
    } else {
        std::memset(dst, value, count);
    }
    return cudaSuccess;
}

std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device_ranges() {
    std::shared_lock<std::shared_mutex> lock(g_mutex);
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
    ranges.reserve(g_allocations.size());
    for (const auto& entry : g_allocations) ranges.emplace_back(entry.second.start, entry.second.end());
    return ranges;
}

void free_all_device_memory() {
    std::map<std::uintptr_t, Allocation> all;
    {
        std::unique_lock<std::shared_mutex> lock(g_mutex);
        for (auto it = g_allocations.begin(); it != g_allocations.end();) {
            if (it->second.raw && it->second.kind != Kind::kPinned) {
                all.insert(*it);
                it = g_allocations.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& entry : all) free_raw(entry.second);
}

}  // namespace cudacpu

using cudacpu::Kind;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, std::size_t size) { return cudacpu::allocate(devPtr, size, Kind::kDevice); }
cudaError_t cudaMallocManaged(void** devPtr, std::size_t size, unsigned int) {
    return cudacpu::allocate(devPtr, size, Kind::kManaged);
}
cudaError_t cudaMallocHost(void** ptr, std::size_t size) { return cudacpu::allocate(ptr, size, Kind::kPinned); }
cudaError_t cudaHostAlloc(void** ptr, std::size_t size, unsigned int) {
    return cudacpu::allocate(ptr, size, Kind::kPinned);
}
cudaError_t cudaMallocAsync(void** devPtr, std::size_t size, cudaStream_t) {
    return cudacpu::allocate(devPtr, size, Kind::kDevice);
}
cudaError_t cudaMallocPitch(void** devPtr, std::size_t* pitch, std::size_t width, std::size_t height) {
    if (!pitch) return cudacpu::record(cudaErrorInvalidValue);
    *pitch = (width + 511) / 512 * 512;
    return cudacpu::allocate(devPtr, *pitch * height, Kind::kDevice);
}
cudaError_t cudaFree(void* devPtr) { return cudacpu::release(devPtr, false); }
cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t) { return cudacpu::release(devPtr, false); }
cudaError_t cudaFreeHost(void* ptr) { return cudacpu::release(ptr, true); }

cudaError_t cudaHostRegister(void* ptr, std::size_t size, unsigned int) {
    if (!ptr || !size) return cudacpu::record(cudaErrorInvalidValue);
    std::unique_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    const auto start = reinterpret_cast<std::uintptr_t>(ptr);
    if (cudacpu::find_locked(start, size)) return cudacpu::record(cudaErrorHostMemoryAlreadyRegistered);
    cudacpu::g_allocations[start] = cudacpu::Allocation{start, size, Kind::kRegisteredHost, nullptr, 0, 0, 0, 0, {}};
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* ptr) {
    std::unique_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    auto it = cudacpu::g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == cudacpu::g_allocations.end() || it->second.kind != Kind::kRegisteredHost)
        return cudacpu::record(cudaErrorHostMemoryNotRegistered);
    cudacpu::g_allocations.erase(it);
    return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int) {
    if (!pDevice || !cudacpu::kernel_accessible(pHost)) return cudacpu::record(cudaErrorInvalidValue);
    *pDevice = pHost;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
    struct sysinfo info {};
    sysinfo(&info);
    if (free) *free = static_cast<std::size_t>(info.freeram) * info.mem_unit;
    if (total) *total = static_cast<std::size_t>(info.totalram) * info.mem_unit;
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
    if (!attributes) return cudacpu::record(cudaErrorInvalidValue);
    std::shared_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    const cudacpu::Allocation* a = cudacpu::find_locked(reinterpret_cast<std::uintptr_t>(ptr));
    attributes->device = 0;
    attributes->devicePointer = nullptr;
    attributes->hostPointer = nullptr;
    attributes->type = cudaMemoryTypeUnregistered;
    if (!a) return cudaSuccess;
    switch (a->kind) {
        case Kind::kDevice:
        case Kind::kSymbol: attributes->type = cudaMemoryTypeDevice; break;
        case Kind::kManaged: attributes->type = cudaMemoryTypeManaged; break;
        default: attributes->type = cudaMemoryTypeHost; break;
    }
    attributes->devicePointer = const_cast<void*>(ptr);
    if (a->kind != Kind::kDevice && a->kind != Kind::kSymbol) attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
    return cudacpu::checked_copy(dst, src, count, kind, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, cudaStream_t) {
    return cudacpu::checked_copy(dst, src, count, kind, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy2D(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                         std::size_t height, cudaMemcpyKind kind) {
    if (width > dpitch || width > spitch) return cudacpu::record(cudaErrorInvalidPitchValue);
    for (std::size_t row = 0; row < height; ++row) {
        const cudaError_t e = cudacpu::checked_copy(static_cast<char*>(dst) + row * dpitch,
                                                    static_cast<const char*>(src) + row * spitch, width, kind,
                                                    "cudaMemcpy2D");
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                              std::size_t height, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemset(void* devPtr, int value, std::size_t count) {
    return cudacpu::checked_set(devPtr, value, count, "cudaMemset");
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, std::size_t count, cudaStream_t) {
    return cudacpu::checked_set(devPtr, value, count, "cudaMemsetAsync");
}
cudaError_t cudaMemset2D(void* devPtr, std::size_t pitch, int value, std::size_t width, std::size_t height) {
    if (width > pitch) return cudacpu::record(cudaErrorInvalidPitchValue);
    for (std::size_t row = 0; row < height; ++row) {
        const cudaError_t e =
            cudacpu::checked_set(static_cast<char*>(devPtr) + row * pitch, value, width, "cudaMemset2D");
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

void cudacpu_name_allocation(const void* ptr, const char* name, std::size_t elements, std::size_t element_size) {
    if (!ptr || !name || !element_size) return;
    std::unique_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    cudacpu::Allocation* a = cudacpu::find_mutable_locked(reinterpret_cast<std::uintptr_t>(ptr));
    if (!a) return;
    const auto start = reinterpret_cast<std::uintptr_t>(ptr);
    auto& names = a->names;
    names.erase(std::remove_if(names.begin(), names.end(),
                               [&](const cudacpu::NamedArray& n) { return n.start == start || n.name == name; }),
                names.end());
    names.push_back(cudacpu::NamedArray{name, start, elements, element_size});
}

cudaError_t cudacpu_set_valid_range(const void* ptr, std::size_t bytes) {
    std::unique_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    const auto start = reinterpret_cast<std::uintptr_t>(ptr);
    cudacpu::Allocation* a = cudacpu::find_mutable_locked(start);
    if (!a || start + bytes > a->end()) return cudacpu::record(cudaErrorInvalidValue);
    a->valid_start = start;
    a->valid_end = start + bytes;
    cudacpu::apply_valid_range(*a);
    return cudaSuccess;
}
}

// Kernel code's entry points for symbols (runtime_api.h): C++, in cudacpu::detail, outside the extern "C" API.
cudaError_t cudacpu::detail::register_symbol(const void* symbol, std::size_t size) {
    std::unique_lock<std::shared_mutex> lock(cudacpu::g_mutex);
    const auto start = reinterpret_cast<std::uintptr_t>(symbol);
    if (!cudacpu::find_locked(start, size))
        cudacpu::g_allocations[start] = cudacpu::Allocation{start, size, Kind::kSymbol, nullptr, 0, 0, 0, 0, {}};
    return cudaSuccess;
}

cudaError_t cudacpu::detail::memcpy_to_symbol(void* symbol, std::size_t symbol_size, const void* src, std::size_t count,
                                             std::size_t offset, cudaMemcpyKind kind) {
    if (const cudaError_t sticky = cudacpu::sticky_error()) return sticky;
    if (offset > symbol_size || count > symbol_size - offset || !src) return cudacpu::record(cudaErrorInvalidValue);
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cudacpu::record(cudaErrorInvalidMemcpyDirection);
    std::memmove(static_cast<char*>(symbol) + offset, src, count);
    return cudaSuccess;
}

cudaError_t cudacpu::detail::memcpy_from_symbol(void* dst, const void* symbol, std::size_t symbol_size,
                                               std::size_t count, std::size_t offset, cudaMemcpyKind kind) {
    if (const cudaError_t sticky = cudacpu::sticky_error()) return sticky;
    if (offset > symbol_size || count > symbol_size - offset || !dst) return cudacpu::record(cudaErrorInvalidValue);
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cudacpu::record(cudaErrorInvalidMemcpyDirection);
    std::memmove(dst, static_cast<const char*>(symbol) + offset, count);
    return cudaSuccess;
}
