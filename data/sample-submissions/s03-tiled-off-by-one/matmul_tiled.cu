// matmul_tiled with 32 x 32 tiles. (Sample submission: the k guard uses <=,
// so the last tile reads one element past the row of a and the column of b.)
#include "cuda_check.h"
#include "tasks.h"

#define TILE 32

template <typename T>
__global__ void tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    __shared__ T as[TILE][TILE];
    __shared__ T bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    T sum = 0;
    for (int t = 0; t < k; t += TILE) {
        int ka = t + threadIdx.x, kb = t + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < m && ka <= k) ? a[(long long)row * k + ka] : T(0);
        bs[threadIdx.y][threadIdx.x] = (kb <= k && col < n) ? b[(long long)kb * n + col] : T(0);
        __syncthreads();
        for (int p = 0; p < TILE; ++p) sum += as[threadIdx.y][p] * bs[p][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[(long long)row * n + col] = sum;
}

template <typename T>
void matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k) {
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    tiled_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)
