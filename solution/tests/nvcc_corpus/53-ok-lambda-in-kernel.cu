// Valid: a lambda defined and called inside a kernel (no --extended-lambda needed).
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(float* x, int n) {
    auto twice = [](float v) { return 2.0f * v; };
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]);
}

void launch(float* x, int n) {
    k<<<(n + 255) / 256, 256>>>(x, n);
    CUDA_CHECK_LAUNCH();
}
