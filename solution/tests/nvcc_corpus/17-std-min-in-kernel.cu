// std::min in a kernel: a constexpr host function (nvcc needs --expt-relaxed-constexpr).
#include <algorithm>
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = std::min(x[i], n);
}

void launch(const int* x, int* out, int n) {
    k<<<1, 32>>>(x, out, n);
    CUDA_CHECK_LAUNCH();
}
