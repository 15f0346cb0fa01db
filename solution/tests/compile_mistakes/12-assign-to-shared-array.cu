// matmul_tiled — reference solution: the classic 32 x 32 shared-memory tile.
//
// Each 32 x 32 block of threads computes a 32 x 32 tile of c. Walking along k,
// every thread loads one element of a's tile and one of b's (0 outside the
// matrices, so sizes need not be multiples of 32), the block synchronizes,
// every thread accumulates 32 products from shared memory, and the block
// synchronizes again before the tiles are overwritten. Threads outside c do
// not return early: they still load and reach every barrier.
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;

template <typename T>
__global__ void matmul_tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    __shared__ T a_tile[kTile][kTile]; a_tile = 0;
    __shared__ T b_tile[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;
    T acc = 0;
    for (int t = 0; t < k; t += kTile) {
        a_tile[ty][tx] = row < m && t + tx < k ? a[static_cast<std::int64_t>(row) * k + t + tx] : T(0);
        b_tile[ty][tx] = t + ty < k && col < n ? b[static_cast<std::int64_t>(t + ty) * n + col] : T(0);
        __syncthreads();
        for (int p = 0; p < kTile; ++p) acc += a_tile[ty][p] * b_tile[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::int64_t>(row) * n + col] = acc;
}

}  // namespace

template <typename T>
void matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k) {
    const dim3 block(kTile, kTile);
    const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
    matmul_tiled_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)
