// transpose — out = in^T, with in rows x cols and out cols x rows:
//   out[c * rows + r] = in[r * cols + c].
//
// A direct version reads coalesced but writes with a stride of `rows` (or the
// other way round). Stage a tile in shared memory instead: read a tile with
// coalesced loads, __syncthreads(), write it back transposed with coalesced
// stores. Pad the tile (e.g. [32][33]) to avoid shared-memory bank conflicts.
// Tiles at the right and bottom edges hang over the matrix: guard both the
// loads and the stores.
//
// Check it:  make test TASK=transpose      Time it:  make bench TASK=transpose
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// template <typename T>
// __global__ void transpose_kernel(const T* in, T* out, int rows, int cols) { ... }

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    // TODO: one block per tile, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}

// Compiles transpose for every type the harness tests; keep this line.
TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
