// matmul_naive — c = a · b, one thread per element of c.
//
// (hostile corpus: the store scales the row index by the whole matrix
// instead of one row and writes gigabytes past the output: a GPU fault that
// leaves the process's CUDA context unusable)
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) return;
    T acc = 0;
    for (int p = 0; p < k; ++p) acc += a[static_cast<long long>(row) * k + p] * b[static_cast<long long>(p) * n + col];
    c[(static_cast<long long>(row) + (1LL << 28)) * n + col] = acc;  // wrong stride: far past the end
}

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    const dim3 block(32, 8);
    const dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
