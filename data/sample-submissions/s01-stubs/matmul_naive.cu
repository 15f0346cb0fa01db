// matmul_naive — c = a · b, one thread per element of c.
//
// a is m x k, b is k x n, c is m x n, all row-major:
//   c[i * n + j] = sum over p of a[i * k + p] * b[p * n + j].
// Map threadIdx.x to the column j: then the 32 threads of a warp read 32
// adjacent elements of b and write 32 adjacent elements of c (coalesced).
// Mapping threadIdx.x to the row instead is still correct, and many times
// slower — try it with `make bench TASK=matmul_naive`.
//
// Accumulate in T. Any m, n, k >= 1: guard the threads outside c.
//
// Check it:  make test TASK=matmul_naive      Time it:  make bench TASK=matmul_naive
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// template <typename T>
// __global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) { ... }

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    // TODO: a 2-D grid of 2-D blocks over c, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}

// Compiles matmul_naive for every type the harness tests; keep this line.
MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
