// PLANTED (slow, not wrong): one thread per element, no shared-memory tile.
// Reads along a row of `in` are coalesced; the writes go down a column of
// `out`, so the 32 lanes of a warp store 32 elements `rows` apart.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void transpose_naive(const T* in, T* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        const T v = in[static_cast<long long>(r) * cols + c];
        out[static_cast<long long>(c) * rows + r] = v;
    }
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    transpose_naive<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
