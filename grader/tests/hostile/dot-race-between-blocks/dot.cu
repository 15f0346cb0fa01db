// dot — a grid-stride loop per thread, a shared-memory tree per block, and each block's sum added to the
// result by its thread 0 with a plain `*result += ...`: a read, an add and a write, which another block
// can interleave with its own. Blocks that do so lose each other's sums.
//
// (hostile corpus: a race between blocks on global memory. With one block the result is right; with many,
// on a GPU, updates are lost in most runs, and compute-sanitizer's racecheck, which watches shared memory
// only, says nothing. On the CPU backend the result usually comes out right (its blocks rarely overlap
// there), and its race checker, which compute-sanitizer's place takes on the CPU, reports the race in
// every run.)
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[kThreads];
    float sum = 0.0f;
    for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) *result += partial[0];
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    const int blocks = (n + kThreads - 1) / kThreads < kMaxBlocks ? (n + kThreads - 1) / kThreads : kMaxBlocks;
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
