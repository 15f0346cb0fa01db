// Valid: extern __shared__, warp shuffles, atomicAdd on float, #pragma unroll, __ldg.
#include "cuda_check.h"
#include "tasks.h"

__device__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(256) dot_kernel(const float* x, const float* y, float* result, int n) {
    extern __shared__ float sums[];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += __ldg(&x[i]) * y[i];
    sum = warp_sum(sum);
    if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int w = 0; w < blockDim.x / 32; ++w) total += sums[w];
        atomicAdd(result, total);
    }
}

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    dot_kernel<<<64, 256, 256 / 32 * sizeof(float)>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
