// matmul_fast: 64 x 64 block tiles, each of 256 threads computing 4 x 4
// elements from registers; a's tile is stored transposed so a thread reads
// its 4 rows for one k in a row.
#include "cuda_check.h"
#include "tasks.h"

#define BM 64
#define BN 64
#define BK 16

__global__ void fast_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[BK][BM];
    __shared__ float bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4] = {};
    for (int t = 0; t < k; t += BK) {
        for (int i = tid; i < BM * BK; i += 256) {
            int r = i / BK, kk = i % BK;
            as[kk][r] = (row0 + r < m && t + kk < k) ? a[(long long)(row0 + r) * k + t + kk] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += 256) {
            int kk = i / BN, cc = i % BN;
            bs[kk][cc] = (t + kk < k && col0 + cc < n) ? b[(long long)(t + kk) * n + col0 + cc] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            float ar[4], br[4];
            for (int i = 0; i < 4; ++i) ar[i] = as[kk][ty * 4 + i];
            for (int j = 0; j < 4; ++j) br[j] = bs[kk][tx * 4 + j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += ar[i] * br[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            int r = row0 + ty * 4 + i, cc = col0 + tx * 4 + j;
            if (r < m && cc < n) c[(long long)r * n + cc] = acc[i][j];
        }
}

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 block(16, 16);
    dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    fast_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}
