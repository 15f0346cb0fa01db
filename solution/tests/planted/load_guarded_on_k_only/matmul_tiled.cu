// PLANTED BUG: the tile loads check only k (t + tx < k), not the row or the
// column: threads of the last, partial tiles read past the ends of a and b. The
// values they read are never stored, so every output is right; only
// compute-sanitizer (memcheck) sees the out-of-bounds reads.
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;

template <typename T>
__global__ void matmul_tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    __shared__ T a_tile[kTile][kTile];
    __shared__ T b_tile[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;
    T acc = 0;
    for (int t = 0; t < k; t += kTile) {
        a_tile[ty][tx] = t + tx < k ? a[static_cast<long long>(row) * k + t + tx] : T(0);
        b_tile[ty][tx] = t + ty < k ? b[static_cast<long long>(t + ty) * n + col] : T(0);
        __syncthreads();
        for (int p = 0; p < kTile; ++p) acc += a_tile[ty][p] * b_tile[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<long long>(row) * n + col] = acc;
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
