// matmul_fast — the fastest float GEMM you can write: c = a · b in FP32.
//
// Start from your tiled kernel and make each thread do more work:
//   * register blocking: each thread computes a small block of c (e.g. 8 x 8)
//     from a column of a's tile and a row of b's tile held in registers;
//   * 16-byte loads (float4) from global and shared memory;
//   * bigger block tiles (e.g. 128 x 128), and a shared-memory layout whose
//     reads are free of bank conflicts;
//   * loading the next tile while computing on this one (double buffering).
// It must stay correct for every shape (any m, n, k >= 1): keep a careful
// path for the edges. Plain FP32 arithmetic only: no tensor cores, no TF32,
// no libraries.
//
// Check it:  make test TASK=matmul_fast      Time it:  make bench TASK=matmul_fast
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel(s).

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    // TODO: launch your kernel(s), then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}
