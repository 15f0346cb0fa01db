// PLANTED BUG: the shared-memory tile is float for every element type (copied
// from a float-only textbook kernel). int32 values above 2^24 are rounded when
// they pass through the tile.
#include "cuda_check.h"
#include "tasks.h"

constexpr int kTile = 32, kRows = 8;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ float tile[kTile][kTile + 1];  // BUG: T, not float
    int x = blockIdx.x * kTile + threadIdx.x;
    int y = blockIdx.y * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<long long>(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * kTile + threadIdx.x;
    y = blockIdx.x * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows)
        if (x < rows && y + j < cols)
            out[static_cast<long long>(y + j) * rows + x] = static_cast<T>(tile[threadIdx.x][threadIdx.y + j]);
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(kTile, kRows);
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
