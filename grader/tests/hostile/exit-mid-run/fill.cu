// fill — a 2-D grid of 2-D blocks writes out[r * cols + c] = r * cols + c.
//
// (hostile corpus: a debugging exit(0) left after the launch ends the harness
// process with a clean status in the middle of a case, before any result)
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[r * cols + c] = r * cols + c;
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
    std::printf("fill: launched %u x %u blocks\n", grid.x, grid.y);
    std::exit(0);  // debugging: stop after the first launch
}
