// Valid: the fill task with a grid-stride loop, integer intrinsics, and __syncwarp.
#include <cstdint>
#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int n = rows * cols;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = i + __popc(static_cast<unsigned>(i)) * 0 + min(i, n) * 0;
    __syncwarp();
}

void fill(std::int32_t* out, int rows, int cols) {
    fill_kernel<<<128, 256>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
