// cudaMemcpy (a host runtime call) in a kernel.
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(float* dst, const float* src, int n) {
    cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice);
}

void launch(float* dst, const float* src, int n) {
    k<<<1, 1>>>(dst, src, n);
    CUDA_CHECK_LAUNCH();
}
