// A kernel launch: the checks a GPU makes before it runs anything, then the
// blocks on the worker pool, then the launch's error, as CUDA reports it.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "diagnostics.h"
#include "errors.h"
#include "launch_state.h"
#include "memory.h"
#include "profile.h"
#include "racecheck.h"
#include "watchdog.h"
#include "worker_pool.h"

namespace cudacpu {

namespace {

// sm_90's limits (an H100).
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockX = 1024, kMaxBlockY = 1024, kMaxBlockZ = 64;
constexpr unsigned kMaxGridX = 2147483647u, kMaxGridYZ = 65535;
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
constexpr std::size_t kMaxSharedOptIn = 227 * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin

std::mutex g_attr_mutex;
std::map<const void*, int> g_max_dynamic_shared;  // kernel key -> cudaFuncAttributeMaxDynamicSharedMemorySize

std::mutex g_launch_mutex;  // one launch at a time, as on CUDA's default stream
std::atomic<double> g_timeout{-1};

double launch_timeout() {
    double t = g_timeout.load();
    if (t < 0) {
        t = 60;
        if (const char* env = std::getenv("CUDA_CPU_LAUNCH_TIMEOUT")) t = std::atof(env);
        double expected = -1;
        g_timeout.compare_exchange_strong(expected, t);
        t = g_timeout.load();
    }
    return t;
}

std::string site_text(const LaunchSite& site) { return where(Site{site.file, site.line}); }

// The configuration error a GPU gives for this launch, with the reason. With
// CUDA 13 an H100 answers every impossible grid or block with
// cudaErrorInvalidValue (older runtimes said cudaErrorInvalidConfiguration);
// tests/gpu_reference/h100.txt records it.
cudaError_t check_configuration(const LaunchSite& site, const detail::KernelIdentity& id, dim3 grid, dim3 block,
                                std::size_t smem, std::string* why) {
    const std::string launch = "launch of " + std::string(id.name ? id.name : site.kernel) + " at " + site_text(site);
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0) {
        *why = launch + ": a grid or block dimension is 0 (grid " + coords(grid) + ", block " + coords(block) + ")";
        return cudaErrorInvalidValue;
    }
    if (block.x > kMaxBlockX || block.y > kMaxBlockY || block.z > kMaxBlockZ || threads > kMaxThreadsPerBlock) {
        *why = launch + ": block " + coords(block) + " has " + std::to_string(threads) +
               " threads; a block may have at most 1024 threads, with x and y at most 1024 and z at most 64";
        return cudaErrorInvalidValue;
    }
    if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ) {
        *why = launch + ": grid " + coords(grid) + " is too large: grid.x may be at most 2147483647, grid.y and "
                                                   "grid.z at most 65535";
        return cudaErrorInvalidValue;
    }
    if (id.max_threads > 0 && threads > static_cast<unsigned long long>(id.max_threads)) {
        *why = launch + ": block " + coords(block) + " has " + std::to_string(threads) +
               " threads, more than the kernel's __launch_bounds__(" + std::to_string(id.max_threads) + ")";
        return cudaErrorInvalidValue;
    }
    std::size_t limit = kDefaultSharedLimit;
    if (id.key) {
        std::lock_guard<std::mutex> lock(g_attr_mutex);
        auto it = g_max_dynamic_shared.find(id.key);
        if (it != g_max_dynamic_shared.end()) limit = static_cast<std::size_t>(it->second);
    } else {
        limit = kMaxSharedOptIn;  // a kernel the driver could not identify: only the hard limit is checked
    }
    if (smem > limit) {
        const std::string allowed = smem > kMaxSharedOptIn ? " bytes allowed (227 KiB at most per block)"
                                    : limit == kDefaultSharedLimit
                                        ? " bytes allowed without cudaFuncSetAttribute(kernel, "
                                          "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first"
                                        : " bytes its cudaFuncSetAttribute(kernel, "
                                          "cudaFuncAttributeMaxDynamicSharedMemorySize, ...) allows";
        *why = launch + ": " + std::to_string(smem) + " bytes of dynamic shared memory, more than the " +
               std::to_string(limit) + allowed;
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

// Kernels read only device memory: a host pointer argument is a bug a GPU
// reports as an illegal address once the kernel uses it.
cudaError_t check_pointers(const LaunchSite& site, const detail::KernelIdentity& id,
                           const detail::PointerArgument* pointers, int count, std::string* why) {
    for (int i = 0; i < count; ++i) {
        const void* p = pointers[i].value;
        if (!p || kernel_accessible(p)) continue;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", p);
        *why = "launch of " + std::string(id.name ? id.name : site.kernel) + " at " + site_text(site) + ": argument " +
               std::to_string(pointers[i].index + 1) + " is " + buf +
               ", which is not device memory (a host pointer, or memory already freed?). Kernels can only use "
               "memory from cudaMalloc (or cudaMallocManaged / cudaMallocHost).";
        return cudaErrorIllegalAddress;
    }
    return cudaSuccess;
}

}  // namespace

namespace detail {

__thread bool t_identify;
__thread KernelIdentity* t_identity;

cudaError_t run_kernel(const LaunchSite& site, const KernelIdentity& id, dim3 grid, dim3 block,
                       std::size_t dynamic_shared_bytes, cudaStream_t, const PointerArgument* pointers,
                       int pointer_count, ThreadEntry entry, void* context) {
    if (const cudaError_t sticky = sticky_error()) return sticky;
    std::string why;
    cudaError_t e = check_configuration(site, id, grid, block, dynamic_shared_bytes, &why);
    if (e == cudaSuccess) e = check_pointers(site, id, pointers, pointer_count, &why);
    if (e != cudaSuccess) {
        report_diagnostic(why + " (" + cudaGetErrorName(e) + ")");
        if (is_sticky(e)) set_sticky_error(e);
        return record(e);
    }
    install_fault_handlers();

    LaunchState launch;
    launch.site = site;
    launch.id = id;
    launch.grid = grid;
    launch.block = block;
    launch.dynamic_shared_bytes = dynamic_shared_bytes;
    launch.entry = entry;
    launch.context = context;
    launch.schedule = current_schedule();
    launch.block_count = 1ull * grid.x * grid.y * grid.z;
    launch.threads_per_block = static_cast<int>(block.x * block.y * block.z);
    launch.shared_limit = kDefaultSharedLimit;
    if (id.key) {
        std::lock_guard<std::mutex> lock(g_attr_mutex);
        auto it = g_max_dynamic_shared.find(id.key);
        if (it != g_max_dynamic_shared.end()) launch.shared_limit = static_cast<std::size_t>(it->second);
    } else {
        launch.shared_limit = kMaxSharedOptIn;
    }

    {
        std::lock_guard<std::mutex> lock(g_launch_mutex);
        launch.timeout_seconds = launch_timeout();
        watchdog_arm(&launch, launch.timeout_seconds);
        const bool racecheck = racecheck_enabled();
        // A profiled launch is counted instead of race-checked (profile.h); both need the device memory's ranges.
        const bool profile = racecheck && profile_enabled();
        launch.profiled = profile;
        if (racecheck) racecheck_begin(launch);
        if (profile) profile_begin(launch);
        WorkerPool::instance().run(launch);
        if (profile) profile_end(launch);
        if (racecheck) racecheck_end();
        watchdog_disarm();
    }

    e = launch.error();
    if (e == cudaSuccess && launch.timeout_requested.load()) {
        e = cudaErrorLaunchTimeout;
        launch.fail(e, launch.describe() + " did not finish within its time limit and was stopped.");
    }
    if (e == cudaSuccess) return cudaSuccess;
    report_diagnostic(launch.message() + " (" + cudaGetErrorName(e) + ")");
    if (is_sticky(e)) set_sticky_error(e);
    return record(e);
}

cudaError_t func_set_attribute(const KernelIdentity& id, const void* pointer, cudaFuncAttribute attr, int value) {
    if (!pointer) return record(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || static_cast<std::size_t>(value) > kMaxSharedOptIn) return record(cudaErrorInvalidValue);
        if (id.key) {
            std::lock_guard<std::mutex> lock(g_attr_mutex);
            g_max_dynamic_shared[id.key] = value;
        }
        return cudaSuccess;
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
        return (value < -1 || value > 100) ? record(cudaErrorInvalidValue) : cudaSuccess;
    }
    return record(cudaErrorInvalidValue);
}

cudaError_t func_get_attributes(const KernelIdentity& id, const void* pointer, cudaFuncAttributes* attr) {
    if (!attr) return record(cudaErrorInvalidValue);
    if (!pointer) return record(cudaErrorInvalidDeviceFunction);
    *attr = cudaFuncAttributes{};
    attr->maxThreadsPerBlock = id.max_threads > 0 ? id.max_threads : 1024;
    attr->ptxVersion = attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = static_cast<int>(kDefaultSharedLimit);
    if (id.key) {
        std::lock_guard<std::mutex> lock(g_attr_mutex);
        auto it = g_max_dynamic_shared.find(id.key);
        if (it != g_max_dynamic_shared.end()) attr->maxDynamicSharedSizeBytes = it->second;
    }
    return cudaSuccess;
}

// As an H100's occupancy calculator would say, from the block size and the
// dynamic shared memory alone (registers and static shared memory are not
// known here): at most 2048 threads, 32 blocks and 228 KiB per SM, with 1 KiB
// reserved per block.
cudaError_t occupancy_max_active_blocks(const KernelIdentity& id, int* blocks, int block_size,
                                        std::size_t dynamic_shared_bytes) {
    if (!blocks || block_size <= 0) return record(cudaErrorInvalidValue);
    if (block_size > 1024 || (id.max_threads > 0 && block_size > id.max_threads)) {
        *blocks = 0;
        return cudaSuccess;
    }
    const int warps = (block_size + 31) / 32;
    int n = std::min(32, 64 / warps);
    const std::size_t per_block = dynamic_shared_bytes + 1024;
    n = std::min<int>(n, static_cast<int>(233472 / per_block));
    *blocks = n;
    return cudaSuccess;
}

}  // namespace detail

}  // namespace cudacpu

extern "C" {

void cudacpu_set_launch_timeout(double seconds) { cudacpu::g_timeout.store(seconds < 0 ? 0 : seconds); }
double cudacpu_launch_timeout(void) { return cudacpu::launch_timeout(); }
void cudacpu_set_workers(int workers) { cudacpu::WorkerPool::instance().set_workers(workers); }
int cudacpu_workers(void) { return cudacpu::WorkerPool::instance().workers(); }
}
