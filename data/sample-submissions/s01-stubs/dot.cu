// dot — *result = sum over i of x[i] * y[i], for 1 <= n <= 2^28.
//
// A block reduction: each thread sums a strided part of the vectors
// (i += gridDim.x * blockDim.x), the block adds its threads' sums in shared
// memory (halve the number of active threads each step, __syncthreads()
// between steps), and one thread per block adds the block's sum to *result
// with atomicAdd.
//
// `result` is one float in device memory, and it is NOT zero when you are
// called: the harness fills it with NaN. Set it to 0 first (cudaMemsetAsync
// on the default stream runs before your kernel).
//
// Check it:  make test TASK=dot      Time it:  make bench TASK=dot
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// __global__ void dot_kernel(const float* x, const float* y, float* result, int n) { ... }

void dot(const float* x, const float* y, float* result, int n) {
    // TODO: zero *result, launch dot_kernel, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}
