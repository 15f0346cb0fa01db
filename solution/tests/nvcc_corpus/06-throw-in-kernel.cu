// throw in device code.
#include <stdexcept>
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) throw std::out_of_range("index");
    out[i] = x[i];
}

void launch(const float* x, float* out, int n) {
    k<<<(n + 255) / 256, 256>>>(x, out, n);
    CUDA_CHECK_LAUNCH();
}
