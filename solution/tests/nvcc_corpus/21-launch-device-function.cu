// <<< >>> on a __device__ function instead of a kernel.
#include "cuda_check.h"
#include "tasks.h"

__device__ void k(float* x) { x[threadIdx.x] = 0.0f; }

void launch(float* x) {
    k<<<1, 32>>>(x);
    CUDA_CHECK_LAUNCH();
}
