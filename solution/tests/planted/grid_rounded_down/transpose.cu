// PLANTED BUG: the grid is the matrix's size divided by the tile, rounded down, and the kernel has no bounds
// checks, as in the textbook's transpose, which assumes sizes that are multiples of the tile. A shape under a
// tile in either dimension (1x1, 1x1000, 70000x3) gets a grid dimension of 0, which the GPU refuses at the
// launch ("invalid configuration argument"); any other shape not a multiple of 32 leaves its last rows and
// columns unwritten. Only 2048x2048 passes. compute-sanitizer's memcheck reports the refused launches too: the
// cases already cost them, so the tool must not charge them again.
#include "cuda_check.h"
#include "tasks.h"

constexpr int kTile = 32, kRows = 8;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[kTile][kTile + 1];
    int x = blockIdx.x * kTile + threadIdx.x;
    int y = blockIdx.y * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * kTile + threadIdx.x;
    y = blockIdx.x * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(kTile, kRows);
    const dim3 grid(cols / kTile, rows / kTile);  // BUG: rounded down
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
