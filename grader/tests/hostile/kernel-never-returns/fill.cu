// fill — a 2-D grid of 2-D blocks writes out[r * cols + c] = r * cols + c.
//
// (hostile corpus: a home-made "wait for the whole grid" that waits for a
// value no thread ever writes, so the kernel never returns)
#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[r * cols + c] = r * cols + c;
    // Wait until the last element is written, so the caller sees a finished matrix.
    volatile std::int32_t* last = out + static_cast<long long>(rows) * cols - 1;
    while (*last != rows * cols) {  // off by one: the last element holds rows * cols - 1
    }
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
