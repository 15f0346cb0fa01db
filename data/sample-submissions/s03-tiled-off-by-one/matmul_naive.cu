// matmul_naive: one thread per element of c.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        T sum = 0;
        for (int p = 0; p < k; ++p) sum += a[(long long)row * k + p] * b[(long long)p * n + col];
        c[(long long)row * n + col] = sum;
    }
}

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    dim3 block(16, 16);
    dim3 grid((n + 15) / 16, (m + 15) / 16);
    naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
