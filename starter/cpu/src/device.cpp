// The emulated device: one sm_90 GPU with an H100 SXM's limits, whose
// memory is this machine's memory. Kernels see these numbers through
// cudaGetDeviceProperties and cudaDeviceGetAttribute, as on the GPU the
// course grades on; only the name says it is the CPU backend.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "errors.h"
#include "memory.h"
#include "runtime_config.h"

namespace cudacpu {

namespace {

cudaDeviceProp make_properties() {
    cudaDeviceProp p;
    std::memset(&p, 0, sizeof p);
    std::snprintf(p.name, sizeof p.name, "CPU backend (cudacpu), emulating an sm_90 GPU");
    p.totalGlobalMem = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    p.sharedMemPerBlock = 48 * 1024;
    p.regsPerBlock = 65536;
    p.warpSize = 32;
    p.memPitch = 2147483647;
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = 1024;
    p.maxThreadsDim[1] = 1024;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647;
    p.maxGridSize[1] = 65535;
    p.maxGridSize[2] = 65535;
    p.clockRate = 1980000;
    p.totalConstMem = 65536;
    p.major = 9;
    p.minor = 0;
    p.textureAlignment = 512;
    p.deviceOverlap = 1;
    p.multiProcessorCount = 132;
    p.kernelExecTimeoutEnabled = 1;
    p.canMapHostMemory = 1;
    p.concurrentKernels = 1;
    p.asyncEngineCount = 1;
    p.unifiedAddressing = 1;
    p.memoryClockRate = 2619000;
    p.memoryBusWidth = 5120;
    p.l2CacheSize = 50 * 1024 * 1024;
    p.persistingL2CacheMaxSize = 0;
    p.maxThreadsPerMultiProcessor = 2048;
    p.streamPrioritiesSupported = 1;
    p.globalL1CacheSupported = 1;
    p.localL1CacheSupported = 1;
    p.sharedMemPerMultiprocessor = 228 * 1024;
    p.regsPerMultiprocessor = 65536;
    p.managedMemory = 1;
    p.concurrentManagedAccess = 1;
    p.cooperativeLaunch = 0;
    p.sharedMemPerBlockOptin = 227 * 1024;
    p.maxBlocksPerMultiProcessor = 32;
    p.reservedSharedMemPerBlock = 1024;
    return p;
}

const cudaDeviceProp& properties() {
    static const cudaDeviceProp p = make_properties();
    return p;
}

int attribute(cudaDeviceAttr attr) {
    const cudaDeviceProp& p = properties();
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: return p.maxThreadsPerBlock;
        case cudaDevAttrMaxBlockDimX: return p.maxThreadsDim[0];
        case cudaDevAttrMaxBlockDimY: return p.maxThreadsDim[1];
        case cudaDevAttrMaxBlockDimZ: return p.maxThreadsDim[2];
        case cudaDevAttrMaxGridDimX: return p.maxGridSize[0];
        case cudaDevAttrMaxGridDimY: return p.maxGridSize[1];
        case cudaDevAttrMaxGridDimZ: return p.maxGridSize[2];
        case cudaDevAttrMaxSharedMemoryPerBlock: return static_cast<int>(p.sharedMemPerBlock);
        case cudaDevAttrTotalConstantMemory: return static_cast<int>(p.totalConstMem);
        case cudaDevAttrWarpSize: return p.warpSize;
        case cudaDevAttrMaxRegistersPerBlock: return p.regsPerBlock;
        case cudaDevAttrClockRate: return p.clockRate;
        case cudaDevAttrMultiProcessorCount: return p.multiProcessorCount;
        case cudaDevAttrKernelExecTimeout: return p.kernelExecTimeoutEnabled;
        case cudaDevAttrCanMapHostMemory: return p.canMapHostMemory;
        case cudaDevAttrConcurrentKernels: return p.concurrentKernels;
        case cudaDevAttrMemoryClockRate: return p.memoryClockRate;
        case cudaDevAttrGlobalMemoryBusWidth: return p.memoryBusWidth;
        case cudaDevAttrL2CacheSize: return p.l2CacheSize;
        case cudaDevAttrMaxThreadsPerMultiProcessor: return p.maxThreadsPerMultiProcessor;
        case cudaDevAttrUnifiedAddressing: return p.unifiedAddressing;
        case cudaDevAttrComputeCapabilityMajor: return p.major;
        case cudaDevAttrComputeCapabilityMinor: return p.minor;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return static_cast<int>(p.sharedMemPerMultiprocessor);
        case cudaDevAttrMaxRegistersPerMultiprocessor: return p.regsPerMultiprocessor;
        case cudaDevAttrManagedMemory: return p.managedMemory;
        case cudaDevAttrConcurrentManagedAccess: return p.concurrentManagedAccess;
        case cudaDevAttrCooperativeLaunch: return p.cooperativeLaunch;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: return static_cast<int>(p.sharedMemPerBlockOptin);
        case cudaDevAttrMaxBlocksPerMultiprocessor: return p.maxBlocksPerMultiProcessor;
        case cudaDevAttrReservedSharedMemoryPerBlock: return static_cast<int>(p.reservedSharedMemPerBlock);
        case cudaDevAttrAsyncEngineCount: return p.asyncEngineCount;
        case cudaDevAttrStreamPrioritiesSupported: return p.streamPrioritiesSupported;
        case cudaDevAttrGlobalL1CacheSupported: return p.globalL1CacheSupported;
        case cudaDevAttrLocalL1CacheSupported: return p.localL1CacheSupported;
        case cudaDevAttrIntegrated: return 0;
        case cudaDevAttrEccEnabled: return 0;
        case cudaDevAttrPciBusId: return 0;
        case cudaDevAttrPciDeviceId: return 0;
        case cudaDevAttrPciDomainId: return 0;
        default: return 0;  // not modeled
    }
}

thread_local int t_device = 0;

}  // namespace

}  // namespace cudacpu

using cudacpu::record;
using cudacpu::sticky_error;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
    if (!count) return record(cudaErrorInvalidValue);
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
    if (!device) return record(cudaErrorInvalidValue);
    *device = cudacpu::t_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (device != 0) return record(cudaErrorInvalidDevice);
    cudacpu::t_device = device;
    return sticky_error();
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return sticky_error(); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (!prop) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    *prop = cudacpu::properties();
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    if (!value) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    *value = cudacpu::attribute(attr);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
    if (!pciBusId || len <= 0) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    std::snprintf(pciBusId, static_cast<std::size_t>(len), "0000:00:00.0");
    return cudaSuccess;
}

// Every call completes before it returns, so there is never anything to
// wait for: synchronizing only reports a kernel fault.
cudaError_t cudaDeviceSynchronize(void) { return sticky_error(); }

cudaError_t cudaDeviceReset(void) {
    cudacpu::free_all_device_memory();
    cudacpu_clear_sticky_error();
    return cudaSuccess;
}

cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return sticky_error(); }
cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return sticky_error(); }

cudaError_t cudaDeviceSetLimit(cudaLimit limit, std::size_t) {
    return limit <= cudaLimitPersistingL2CacheSize ? sticky_error() : record(cudaErrorUnsupportedLimit);
}

cudaError_t cudaDeviceGetLimit(std::size_t* value, cudaLimit limit) {
    if (!value) return record(cudaErrorInvalidValue);
    switch (limit) {
        case cudaLimitStackSize: *value = cudacpu::config().stack_bytes; break;
        case cudaLimitPrintfFifoSize: *value = 1 << 20; break;
        case cudaLimitMallocHeapSize: *value = 8 << 20; break;
        default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
    if (!version) return record(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
    if (!version) return record(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaCtxResetPersistingL2Cache(void) { return sticky_error(); }
cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
}
