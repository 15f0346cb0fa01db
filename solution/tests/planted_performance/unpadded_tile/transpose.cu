// PLANTED (slow, not wrong): the shared-memory tile without its padding
// column. Reading a column of a [32][32] float tile puts all 32 lanes of a
// warp in one bank: 32 passes where 1 would do.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void transpose_tiled(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[32][32];
    const int x = blockIdx.x * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int y = blockIdx.y * 32 + j;
        if (y < rows && x < cols) tile[j][threadIdx.x] = in[static_cast<long long>(y) * cols + x];
    }
    __syncthreads();
    const int ox = blockIdx.y * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int oy = blockIdx.x * 32 + j;
        if (oy < cols && ox < rows) out[static_cast<long long>(oy) * rows + ox] = tile[threadIdx.x][j];
    }
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 31) / 32);
    transpose_tiled<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
