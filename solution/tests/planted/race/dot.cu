// PLANTED BUG: each block adds its sum to *result with a plain `+=`, so
// blocks that read *result at the same time lose each other's updates.
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float sums[kThreads];
    float sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) *result += sums[0];  // BUG: not atomic
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float), 0));
    const int blocks = (n + kThreads - 1) / kThreads < 1024 ? (n + kThreads - 1) / kThreads : 1024;
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
