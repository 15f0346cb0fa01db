// dot — *result = sum of x[i] * y[i], with a "memory pool" that takes every
// byte of the GPU and never gives it back.
//
// (hostile corpus: the first call grabs all free GPU memory in 256 MiB pieces;
// its own scratch buffer then cannot be allocated, nor can the harness's
// buffers for the next cases. The process ends with the submission, and the
// next submission must find the GPU whole.)
#include <algorithm>
#include <vector>

#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;

__global__ void partial_sums(const float* x, const float* y, float* partial, int n) {
    __shared__ float s[kThreads];
    float sum = 0.0f;
    for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) sum += x[i] * y[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int k = kThreads / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void final_sum(const float* partial, float* result, int blocks) {
    float sum = 0.0f;
    for (int i = 0; i < blocks; ++i) sum += partial[i];
    *result = sum;
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    static std::vector<void*> pool;  // "reserved for later calls" (a function-local static: no startup code)
    for (void* p = nullptr; cudaMalloc(&p, std::size_t(256) << 20) == cudaSuccess;) pool.push_back(p);
    for (void* p = nullptr; cudaMalloc(&p, std::size_t(1) << 20) == cudaSuccess;) pool.push_back(p);
    (void)cudaGetLastError();  // the failed allocation that ended the loops
    const int blocks = std::min((n + kThreads - 1) / kThreads, 1024);
    float* partial = nullptr;
    CUDA_CHECK(cudaMalloc(&partial, blocks * sizeof(float)));  // fails: out of memory
    partial_sums<<<blocks, kThreads>>>(x, y, partial, n);
    final_sum<<<1, 1>>>(partial, result, blocks);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaFree(partial));
}
