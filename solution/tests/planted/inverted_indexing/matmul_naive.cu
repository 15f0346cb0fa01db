// PLANTED (not a bug): threadIdx.x walks down a column of c instead of along
// a row. Every answer is right, but a warp now reads 32 elements of b that are
// n apart and writes 32 elements of c that are n apart: uncoalesced, and many
// times slower than the coalesced version.
#include "cuda_check.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;  // inverted: x is the row
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    T acc = 0;
    for (int p = 0; p < k; ++p) acc += a[static_cast<long long>(row) * k + p] * b[static_cast<long long>(p) * n + col];
    c[static_cast<long long>(row) * n + col] = acc;
}

}  // namespace

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    const dim3 block(32, 8);
    const dim3 grid((m + block.x - 1) / block.x, (n + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
