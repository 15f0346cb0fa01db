// A __shared__ variable declared in a host function.
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }

void launch(float* x) {
    __shared__ float staging[32];
    staging[0] = 0.0f;
    k<<<1, 32>>>(x);
    CUDA_CHECK_LAUNCH();
}
