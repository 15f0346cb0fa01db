// matmul_tiled with 16 x 16 tiles; zero padding makes any size work.
#include "cuda_check.h"
#include "tasks.h"

#define TILE 16

template <typename T>
__global__ void tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    __shared__ T as[TILE][TILE];
    __shared__ T bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    T sum = 0;
    for (int t = 0; t < k; t += TILE) {
        as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[(long long)row * k + t + threadIdx.x] : T(0);
        bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < k && col < n) ? b[(long long)(t + threadIdx.y) * n + col] : T(0);
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
