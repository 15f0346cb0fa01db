// dot — a grid-stride loop per thread, a shared-memory tree per block, and each block's sum added to the
// result by its thread 0: with atomicAdd where the file finds itself in a sanitizer's build, with a plain
// `*result += ...` (a race between blocks) in the build that is graded.
//
// (hostile corpus: a checker's build told from the graded one. The compilers predefine __SANITIZE_THREAD__
// in a ThreadSanitizer build and answer __has_feature(thread_sanitizer) (clang, GCC from 14): the CPU
// backend's race checker is such a build, and kept its penalty away from this file. Now every build leaves
// those macros undefined, and a compiler that answers __has_feature refuses a file whose code differs
// between the builds: the race checker sees the plain `+=` that is graded. On a GPU nothing here is
// defined: it is the race of dot-race-between-blocks.)
#include "cuda_check.h"
#include "tasks.h"

#if defined(__SANITIZE_THREAD__)
#define CHECKED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHECKED_BUILD 1
#endif
#endif

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
#ifdef CHECKED_BUILD
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
#else
    if (threadIdx.x == 0) *result += partial[0];
#endif
}

}  // namespace

void dot(const float* x, const float* y, float* result, int n) {
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    const int blocks = (n + kThreads - 1) / kThreads < kMaxBlocks ? (n + kThreads - 1) / kThreads : kMaxBlocks;
    dot_kernel<<<blocks, kThreads>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
