// What the harness reports about the GPU it ran on.
#pragma once

#include <cstddef>
#include <string>

struct DeviceInfo {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    std::size_t l2_bytes = 0;
    std::size_t memory_bytes = 0;
    int driver_version = 0, runtime_version = 0;  // e.g. 13000 for 13.0
    std::string pci_bus_id;
};

// Whether a usable CUDA device exists; when not, `why` is one sentence for people.
bool cuda_device_available(std::string* why);
DeviceInfo query_device();
// Selects CUDA device `index` and describes it; when there is none or it cannot
// be opened, prints why (prefixed with `program` where CUDA said it) and returns false.
bool open_device(int index, const char* program, DeviceInfo* device);
std::string cuda_version_string(int v);  // 13000 -> "13.0"

// SM clock and the reasons it is held below its maximum, read through NVML
// when the driver provides it (-1 and "" when it does not).
int current_sm_clock_mhz(const DeviceInfo& d);
int max_sm_clock_mhz(const DeviceInfo& d);
std::string clock_limit_reasons(const DeviceInfo& d);

// NVML's clock-event reasons that slow the SM clock down: power cap, hardware
// slowdown, software and hardware thermal, power brake. (Idle, application
// clocks, sync boost and display clocks do not throttle a running kernel.)
constexpr unsigned long long kThrottleReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// One reading of the clock, taken right after a timed sample.
struct ClockReading {
    int sm_mhz = -1;          // -1: unknown
    bool throttled = false;   // a throttling reason is active and the clock is below its maximum
};
ClockReading read_clock(const DeviceInfo& d);
// Whether a reading counts as throttled: a throttling reason active while the
// clock is below its maximum (either unknown: the reason alone decides).
bool is_throttled(unsigned long long reasons, int sm_mhz, int max_mhz);
