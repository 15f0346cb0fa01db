// A kernel called as a function from device code.
#include "cuda_check.h"
#include "tasks.h"

__global__ void inner(float* x) { x[threadIdx.x] = 0.0f; }

__global__ void outer(float* x) { inner(x); }

void launch(float* x) {
    outer<<<1, 32>>>(x);
    CUDA_CHECK_LAUNCH();
}
