// dot: each thread sums a strided slice, the block reduces in shared memory,
// and thread 0 of each block adds the block's sum atomically.
#include "cuda_check.h"
#include "tasks.h"

#define THREADS 256

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[THREADS];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    int blocks = (n + THREADS - 1) / THREADS;
    if (blocks > 1024) blocks = 1024;
    dot_kernel<<<blocks, THREADS>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
