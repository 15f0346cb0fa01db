// cuda_check.h — check every CUDA call and every kernel launch.
//
//   CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
//   my_kernel<<<grid, block>>>(...);
//   CUDA_CHECK_LAUNCH();
//
// On failure it throws CudaError whose message holds the call's own text, the
// file and line, and CUDA's description of the error, e.g.
//   kernels/add.cu:31: cudaGetLastError() failed: invalid configuration argument
// The harness catches it and reports the case as `error` with that message.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

struct CudaError : std::runtime_error {
    cudaError_t code;
    CudaError(cudaError_t c, const std::string& what) : std::runtime_error(what), code(c) {}
};

inline void cuda_check_failed(cudaError_t err, const char* call, const char* file, int line) {
    throw CudaError(err, std::string(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + cudaGetErrorString(err) + " (" +
                             cudaGetErrorName(err) + ")");
}

#define CUDA_CHECK(call)                                                   \
    do {                                                                   \
        cudaError_t cuda_check_err_ = (call);                              \
        if (cuda_check_err_ != cudaSuccess)                                \
            cuda_check_failed(cuda_check_err_, #call, __FILE__, __LINE__); \
    } while (0)

// A launch itself returns nothing: bad grid or block sizes show up in
// cudaGetLastError() right after it.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
