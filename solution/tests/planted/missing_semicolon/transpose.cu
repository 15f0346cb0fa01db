// PLANTED BUG: a missing semicolon (end of the line "int r = ..."). The file does not compile; the
// other tasks must still build and run.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y
    if (r < rows && c < cols) out[(long long)c * rows + r] = in[(long long)r * cols + c];
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid((cols + 31) / 32, (rows + 7) / 8);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
