// Textbook CUDA kernels the tests run on the CPU backend, each behind a host
// launcher with the shape of the assignment's tasks. Written the way course
// material writes them, so that the backend is tested on code it was not
// written against.
#pragma once

#include <cstddef>

namespace textbook {

// c = a b, one thread per element (16 x 16 blocks).
void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k);
// c = a b with 16 x 16 shared-memory tiles.
void matmul_shared(const float* a, const float* b, float* c, int m, int n, int k);
// c = a b with 64 x 64 block tiles, 8-deep k slabs in shared memory, and a
// 4 x 4 register tile of c per thread (256 threads).
void matmul_register_blocked(const float* a, const float* b, float* c, int m, int n, int k);
// out = in^T through a 32 x 33 shared tile (padding against bank conflicts), 32 x 8 threads.
void transpose_padded(const float* in, float* out, int rows, int cols);
// *result = x . y: per-block tree reduction in dynamic shared memory, one atomicAdd per block.
void dot_shared_tree(const float* x, const float* y, float* result, int n);
// *result = x . y: warp shuffles, then one atomicAdd per warp.
void dot_warp_shuffle(const float* x, const float* y, float* result, int n);

}  // namespace textbook
