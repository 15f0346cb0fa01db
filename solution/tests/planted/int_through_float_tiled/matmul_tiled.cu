// PLANTED BUG: the accumulator is a float for every element type. int32 sums
// above 2^24 and every float64 sum lose their low bits in it: int32 results
// come out a little off, float64 ones only as accurate as float32.
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
    float acc = 0;  // BUG: T, not float
    for (int t = 0; t < k; t += kTile) {
        a_tile[ty][tx] = row < m && t + tx < k ? a[static_cast<long long>(row) * k + t + tx] : T(0);
        b_tile[ty][tx] = t + ty < k && col < n ? b[static_cast<long long>(t + ty) * n + col] : T(0);
        __syncthreads();
        for (int p = 0; p < kTile; ++p) acc += a_tile[ty][p] * b_tile[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<long long>(row) * n + col] = static_cast<T>(acc);
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
