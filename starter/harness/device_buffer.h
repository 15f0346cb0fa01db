// An owned block of device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda_check.h"

// What a case reports when the harness cannot allocate one of its arrays. Out of memory there is almost never
// the harness's doing: a launcher that allocated and did not free took the memory in an earlier call, so the
// message says that, in the student's words, rather than quoting the harness's own file.
inline std::string allocation_failure_message(std::size_t bytes, cudaError_t err, const char* file, int line) {
    std::string what = "the harness could not allocate " + std::to_string(bytes) + " bytes on the GPU for this case: " +
                       cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
    if (err == cudaErrorMemoryAllocation)
        what += "; the GPU's memory was already taken when the case began: memory your code allocates with cudaMalloc "
                "must be freed (cudaFree) before your function returns";
    return what + " [" + file + ":" + std::to_string(line) + "]";
}

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
        if (!bytes_) return;
        const cudaError_t err = cudaMalloc(&ptr_, bytes_);
        if (err != cudaSuccess) {
            ptr_ = nullptr;
            if (err == cudaErrorMemoryAllocation) (void)cudaGetLastError();  // not sticky: the next case may fit
            throw CudaError(err, allocation_failure_message(bytes_, err, __FILE__, __LINE__));
        }
    }
    ~DeviceBuffer() {
        // cudaFree only fails once the context is already lost; nothing to add then.
        if (ptr_) (void)cudaFree(ptr_);
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return ptr_; }
    template <typename T> T* as() const { return static_cast<T*>(ptr_); }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};
