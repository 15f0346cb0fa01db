// dot: grid-stride partial sums, a shared-memory tree per block, one atomicAdd per block.
// Host-side messages built with std::to_string, as students write them.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "tasks.h"

constexpr int kThreads = 256;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[kThreads];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

static std::string describe(int n, long blocks, unsigned threads, double per_block) {
    return "dot: n=" + std::to_string(n) + " blocks=" + std::to_string(blocks) + " threads=" +
           std::to_string(threads) + " per block=" + std::to_string(per_block) + " scale=" + std::to_string(1.5f);
}

void dot(const float* x, const float* y, float* result, int n) {
    const long blocks = std::min<long>((n + kThreads - 1) / kThreads, 1024);
    if (blocks <= 0) throw std::invalid_argument("dot: no work for n = " + std::to_string(n));
    const std::string note = describe(n, blocks, kThreads, double(n) / blocks);
    if (n < 0) std::fprintf(stderr, "%s\n", note.c_str());
    CUDA_CHECK(cudaMemset(result, 0, sizeof(float)));
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
