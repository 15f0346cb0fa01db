// dot: a correct reduction, and a global object whose constructor runs before the harness's main
// (here it only touches the GPU early; it could as well tamper with the harness's state).
#include "cuda_check.h"
#include "tasks.h"

struct EarlyStart {
    EarlyStart() { cudaFree(nullptr); }  // creates the CUDA context before main
};
EarlyStart early_start;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[256];
    float sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    const int blocks = (n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024;
    dot_kernel<<<blocks, 256>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
