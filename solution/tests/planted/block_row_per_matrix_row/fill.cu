// PLANTED BUG: one block row per matrix row, in grid.y. Correct while a matrix
// has at most 65,535 rows, the most grid.y allows; a taller one (70000 x 3) is
// refused at launch with "invalid configuration argument".
#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y;  // BUG: rows in grid.y, one block row each
    if (row < rows && col < cols) out[static_cast<long long>(row) * cols + col] = row * cols + col;
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(256);
    const dim3 grid((cols + block.x - 1) / block.x, rows);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
