// transpose through a 32 x 32 shared tile (padded against bank conflicts).
#include "cuda_check.h"
#include "tasks.h"

#define TILE 32

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (y + j < rows && x < cols) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // now a column of in = a row of out
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (y + j < cols && x < rows) out[(long long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    dim3 block(TILE, 16);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
