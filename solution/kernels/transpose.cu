// transpose — reference solution: the classic shared-memory tile.
//
// A 32 x 8 block moves a 32 x 32 tile: it reads the tile row by row
// (coalesced), and after __syncthreads() writes it column by column of the
// tile, which are rows of `out` (coalesced again). The extra column of padding
// puts a tile column's 32 elements in 32 different shared-memory banks.
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[kTile][kTile + 1];
    const int c = blockIdx.x * kTile + threadIdx.x;
    const int r0 = blockIdx.y * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRowsPerPass)
        if (r0 + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<std::int64_t>(r0 + j) * cols + c];
    __syncthreads();
    // The block's tile lands at rows [blockIdx.x * 32, +32) and columns [blockIdx.y * 32, +32) of out.
    const int oc = blockIdx.y * kTile + threadIdx.x;
    const int or0 = blockIdx.x * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRowsPerPass)
        if (or0 + j < cols && oc < rows) out[static_cast<std::int64_t>(or0 + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(kTile, kRowsPerPass);
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
