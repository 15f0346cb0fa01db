// PLANTED BUG: the result is stored at c[col * m + row] instead of
// c[row * n + col]: for square matrices, the transpose of the answer.
#include "cuda_check.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    T acc = 0;
    for (int p = 0; p < k; ++p) acc += a[static_cast<long long>(row) * k + p] * b[static_cast<long long>(p) * n + col];
    c[static_cast<long long>(col) * m + row] = acc;  // BUG: row and column swapped
}

}  // namespace

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    const dim3 block(32, 8);
    const dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
