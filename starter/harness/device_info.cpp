#include "device_info.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#include "cuda_check.h"

bool cuda_device_available(std::string* why) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) return true;
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0))
        *why = "No CUDA device found: this machine has no NVIDIA GPU that CUDA can use, so the kernels cannot run here.";
    else if (err == cudaErrorInsufficientDriver)
        *why = "No CUDA device found: the NVIDIA driver is missing or older than this CUDA runtime (" +
               std::string(cudaGetErrorString(err)) + ").";
    else
        *why = std::string("No CUDA device could be opened: ") + cudaGetErrorString(err) + ".";
    return false;
}

bool open_device(int index, const char* program, DeviceInfo* device) {
    std::string why;
    if (!cuda_device_available(&why)) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return false;
    }
    try {
        CUDA_CHECK(cudaSetDevice(index));
        *device = query_device();
    } catch (const CudaError& e) {
        std::fprintf(stderr, "%s: cannot use CUDA device %d: %s\n", program, index, e.what());
        return false;
    }
    return true;
}

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

DeviceInfo query_device() {
    DeviceInfo d;
    CUDA_CHECK(cudaGetDevice(&d.index));
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, d.index));
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    d.memory_bytes = p.totalGlobalMem;
    CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
    CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
    char bus[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, d.index));
    d.pci_bus_id = bus;
    return d;
}

// NVML is loaded at run time: it ships with the driver, not the toolkit, and
// the harness must also start on machines without one (to list its tasks).
namespace {

struct Nvml {
    using Init = int (*)();
    using HandleByBus = int (*)(const char*, void**);
    using ClockInfo = int (*)(void*, int, unsigned*);
    using Reasons = int (*)(void*, unsigned long long*);
    Init init = nullptr;
    HandleByBus handle_by_bus = nullptr;
    ClockInfo clock = nullptr, max_clock = nullptr;
    Reasons reasons = nullptr;
    bool ok = false;
};

const Nvml& nvml() {
    static Nvml n;
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return;
        n.init = reinterpret_cast<Nvml::Init>(dlsym(lib, "nvmlInit_v2"));
        n.handle_by_bus = reinterpret_cast<Nvml::HandleByBus>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
        n.clock = reinterpret_cast<Nvml::ClockInfo>(dlsym(lib, "nvmlDeviceGetClockInfo"));
        n.max_clock = reinterpret_cast<Nvml::ClockInfo>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
        n.reasons = reinterpret_cast<Nvml::Reasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
        if (!n.reasons)
            n.reasons = reinterpret_cast<Nvml::Reasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
        n.ok = n.init && n.handle_by_bus && n.clock && n.max_clock && n.init() == 0;
    });
    return n;
}

void* nvml_handle(const DeviceInfo& d) {
    const Nvml& n = nvml();
    void* h = nullptr;
    if (!n.ok || n.handle_by_bus(d.pci_bus_id.c_str(), &h) != 0) return nullptr;
    return h;
}

constexpr int kNvmlClockSm = 1;

}  // namespace

int current_sm_clock_mhz(const DeviceInfo& d) {
    unsigned mhz = 0;
    void* h = nvml_handle(d);
    return h && nvml().clock(h, kNvmlClockSm, &mhz) == 0 ? static_cast<int>(mhz) : -1;
}

int max_sm_clock_mhz(const DeviceInfo& d) {
    unsigned mhz = 0;
    void* h = nvml_handle(d);
    return h && nvml().max_clock(h, kNvmlClockSm, &mhz) == 0 ? static_cast<int>(mhz) : -1;
}

bool is_throttled(unsigned long long reasons, int sm_mhz, int max_mhz) {
    if (!(reasons & kThrottleReasons)) return false;
    return sm_mhz <= 0 || max_mhz <= 0 || sm_mhz < max_mhz;
}

ClockReading read_clock(const DeviceInfo& d) {
    ClockReading c;
    void* h = nvml_handle(d);
    if (!h) return c;
    unsigned mhz = 0, max = 0;
    unsigned long long reasons = 0;
    if (nvml().clock(h, kNvmlClockSm, &mhz) == 0) c.sm_mhz = static_cast<int>(mhz);
    const bool known_max = nvml().max_clock(h, kNvmlClockSm, &max) == 0;
    if (nvml().reasons && nvml().reasons(h, &reasons) == 0)
        c.throttled = is_throttled(reasons, c.sm_mhz, known_max ? static_cast<int>(max) : -1);
    return c;
}

std::string clock_limit_reasons(const DeviceInfo& d) {
    static const struct { unsigned long long bit; const char* name; } kReasons[] = {
        {0x1, "idle"}, {0x2, "application clocks"}, {0x4, "power cap"}, {0x8, "hardware slowdown"},
        {0x10, "sync boost"}, {0x20, "software thermal"}, {0x40, "hardware thermal"},
        {0x80, "power brake"}, {0x100, "display clocks"}};
    void* h = nvml_handle(d);
    unsigned long long bits = 0;
    if (!h || !nvml().reasons || nvml().reasons(h, &bits) != 0) return "";
    std::string out;
    for (const auto& r : kReasons)
        if (bits & r.bit) out += (out.empty() ? "" : ", ") + std::string(r.name);
    return out.empty() ? "none" : out;
}
