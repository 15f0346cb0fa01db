// PLANTED BUG: instantiated for float only (see the end of the file). The file
// compiles and links; its double and int32 cases fail with a message naming
// the missing instantiations, and its float cases still pass.
// matmul_naive — reference solution: one thread per element of c.
//
// threadIdx.x walks along a row of c, so a warp reads 32 adjacent elements of
// a row of b (coalesced), all read the same element of a (a broadcast), and
// write 32 adjacent elements of c.
#include "cuda_check.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    const T* a_row = a + static_cast<std::int64_t>(row) * k;
    T acc = 0;
    for (int p = 0; p < k; ++p) acc += a_row[p] * b[static_cast<std::int64_t>(p) * n + col];
    c[static_cast<std::int64_t>(row) * n + col] = acc;
}

}  // namespace

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    const dim3 block(32, 8);
    const dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

// PLANTED BUG (see the top of the file): only float is instantiated, as in
// the textbook kernels; the harness also calls matmul_naive<double> and <int32>.
INSTANTIATE_MATMUL_NAIVE(float)
