// PLANTED (slow, not wrong): the textbook's first block reduction. At step s
// only threads whose index is a multiple of 2s work, so every warp runs with
// 16, then 8, 4, 2, 1 of its 32 lanes active (divergence).
#include "cuda_check.h"
#include "tasks.h"

constexpr int kThreads = 256;

__global__ void dot_interleaved(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[kThreads];
    const int tid = threadIdx.x;
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    partial[tid] = sum;
    __syncthreads();
    for (int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(result, partial[0]);
}

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float), 0));
    const int blocks = (n + kThreads - 1) / kThreads < 1024 ? (n + kThreads - 1) / kThreads : 1024;
    dot_interleaved<<<blocks > 0 ? blocks : 1, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
