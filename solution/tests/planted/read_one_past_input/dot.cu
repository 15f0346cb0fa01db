// PLANTED BUG: the loop runs while i <= n, so one thread loads x[n] and y[n],
// one element past the end of each input. The product is kept out of the sum,
// so the result is right: only a memory checker sees the read, and only where
// nothing readable follows the array (placement.h: the sanitizer run's exact
// allocations; on the CPU backend AddressSanitizer, in every run).
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float sums[kThreads];
    float sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) {  // BUG: i <= n
        // Volatile: the compiler keeps the loads even though i == n never uses them.
        const float xi = *static_cast<const volatile float*>(x + i);
        const float yi = *static_cast<const volatile float*>(y + i);
        if (i < n) sum += xi * yi;
    }
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, sums[0]);
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float), 0));
    const int blocks = n / kThreads + 1 < 1024 ? n / kThreads + 1 : 1024;
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
