// matmul_tiled — c = a · b with shared-memory tiles.
//
// Each block computes a TILE x TILE block of c. It walks along k one tile at
// a time: every thread loads one element of a's tile and one of b's tile into
// shared memory, __syncthreads(), every thread accumulates TILE products from
// shared memory, __syncthreads() again before the tiles are overwritten.
//
// Sizes need not be multiples of TILE: load 0 for elements outside a or b,
// and store only inside c. Do not `return` early for threads outside c —
// they must still help load tiles and reach every __syncthreads().
//
// Check it:  make test TASK=matmul_tiled      Time it:  make bench TASK=matmul_tiled
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// template <typename T, int TILE>
// __global__ void matmul_tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) { ... }

template <typename T>
void matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k) {
    // TODO: one TILE x TILE block per tile of c, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}

// Compiles matmul_tiled for every type the harness tests; keep this line.
MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)
