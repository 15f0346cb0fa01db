// A kernel called like a function, without <<< >>>.
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }

void launch(float* x) {
    k(x);
    CUDA_CHECK_LAUNCH();
}
