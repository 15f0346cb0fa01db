// Streams and events. Work runs to completion when it is issued, so every
// stream is always idle and an event's time is the moment it was recorded:
// cudaEventElapsedTime between two events measures the host time of the
// work issued between them, kernels included.
#include <chrono>
#include <mutex>
#include <set>

#include "errors.h"

struct CUstream_st {
    unsigned flags;
    int priority;
};

struct CUevent_st {
    unsigned flags;
    bool recorded = false;
    std::chrono::steady_clock::time_point when;
};

namespace cudacpu {
namespace {

std::mutex g_mutex;
std::set<const void*> g_live;  // streams and events not yet destroyed

bool live(const void* handle) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_live.count(handle) != 0;
}

// The default stream (0) and the per-thread/legacy handles are always valid.
bool valid_stream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread || live(s); }

template <class T>
T* remember(T* handle) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live.insert(handle);
    return handle;
}

bool forget(const void* handle) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_live.erase(handle) != 0;
}

}  // namespace
}  // namespace cudacpu

using cudacpu::record;
using cudacpu::sticky_error;

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
    if (!stream) return record(cudaErrorInvalidValue);
    *stream = cudacpu::remember(new CUstream_st{flags, priority});
    return sticky_error();
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithPriority(stream, 0, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
    return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!stream || !cudacpu::forget(stream)) return record(cudaErrorInvalidResourceHandle);
    delete stream;
    return sticky_error();
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    if (!cudacpu::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return sticky_error();
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
    if (!cudacpu::valid_stream(stream) || !event || !cudacpu::live(event)) return record(cudaErrorInvalidResourceHandle);
    return sticky_error();
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
    if (!cudacpu::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (!fn) return record(cudaErrorInvalidValue);
    if (const cudaError_t sticky = sticky_error()) return sticky;
    fn(userData);
    return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData, unsigned int) {
    if (!cudacpu::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (!callback) return record(cudaErrorInvalidValue);
    callback(stream, sticky_error(), userData);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
    if (!event) return record(cudaErrorInvalidValue);
    *event = cudacpu::remember(new CUevent_st{flags, false, {}});
    return sticky_error();
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    if (!event || !cudacpu::forget(event)) return record(cudaErrorInvalidResourceHandle);
    delete event;
    return sticky_error();
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    if (!event || !cudacpu::live(event) || !cudacpu::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (const cudaError_t sticky = sticky_error()) return sticky;
    event->recorded = true;
    event->when = std::chrono::steady_clock::now();
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    if (!event || !cudacpu::live(event)) return record(cudaErrorInvalidResourceHandle);
    return sticky_error();
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    if (!ms) return record(cudaErrorInvalidValue);
    if (!start || !end || !cudacpu::live(start) || !cudacpu::live(end)) return record(cudaErrorInvalidResourceHandle);
    if (const cudaError_t sticky = sticky_error()) return sticky;
    if ((start->flags | end->flags) & cudaEventDisableTiming) return record(cudaErrorInvalidResourceHandle);
    if (!start->recorded || !end->recorded) return record(cudaErrorInvalidResourceHandle);
    *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
    return cudaSuccess;
}
}
