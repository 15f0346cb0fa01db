// dot — *result = sum of x[i] * y[i], a shared-memory block reduction.
//
// (hostile corpus: an error check with its test inverted calls abort() after
// every launch, killing the harness process with SIGABRT)
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[kThreads];
    float sum = 0.0f;
    for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    const int blocks = std::min((n + kThreads - 1) / kThreads, 1024);
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    if (cudaGetLastError() == cudaSuccess) {  // inverted: meant != cudaSuccess
        std::fprintf(stderr, "dot: the launch failed\n");
        std::abort();
    }
}
