// dot — reference solution.
//
// Each thread sums x[i] * y[i] over a grid-strided part of the vectors, four
// elements per 16-byte load; the block then reduces its threads' sums (warp
// shuffles, then the warps' sums through shared memory), and one thread per
// block adds the block's sum to *result with atomicAdd. *result is zeroed
// first on the same (default) stream.
#include <algorithm>
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// Whether every pointer is 16-byte aligned (cudaMalloc gives 256). Each kernel file
// stands alone, as a submission must: the grader takes task files only.
template <typename... P>
bool aligned16(const P*... p) {
    return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void dot_kernel(const float* x, const float* y, float* result, int n, bool vectorized) {
    const int stride = gridDim.x * blockDim.x;
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    const int vectors = vectorized ? n / 4 : 0;
    float sum = 0;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    for (int i = first; i < vectors; i += stride) {
        const float4 a = x4[i], b = y4[i];
        sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    for (int i = 4 * vectors + first; i < n; i += stride) sum += x[i] * y[i];

    __shared__ float warp_sums[kThreads / 32];
    sum = warp_sum(sum);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = warp_sum(lane < kThreads / 32 ? warp_sums[lane] : 0.0f);
        if (lane == 0) atomicAdd(result, sum);
    }
}

int sm_count() {
    static const int count = [] {
        int device = 0, sms = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        return sms;
    }();
    return count;
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float), 0));
    const bool vectorized = aligned16(x, y);
    const int work = vectorized ? (n + 3) / 4 : n;
    const int blocks = std::min((work + kThreads - 1) / kThreads, kBlocksPerSm * sm_count());
    dot_kernel<<<blocks, kThreads>>>(x, y, &n, n, vectorized);
    CUDA_CHECK_LAUNCH();
}
