// fill — your first kernel: thread organization.
//
// Write out[r * cols + c] = r * cols + c for every element of a rows x cols
// int32 matrix, using a 2-D grid of 2-D blocks: thread (threadIdx.x,
// threadIdx.y) of block (blockIdx.x, blockIdx.y) handles column
// c = blockIdx.x * blockDim.x + threadIdx.x and row r = blockIdx.y * blockDim.y + threadIdx.y.
//
// rows and cols can be anything from 1 up, so the grid usually covers a few
// elements too many: guard with `if (r < rows && c < cols)`.
//
// Check it:  make test TASK=fill      Time it:  make bench TASK=fill
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// __global__ void fill_kernel(std::int32_t* out, int rows, int cols) { ... }

void fill(std::int32_t* out, int rows, int cols) {
    // TODO: choose a block (e.g. dim3 block(32, 8)) and a grid that covers
    // every element (round up!), launch fill_kernel, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}
