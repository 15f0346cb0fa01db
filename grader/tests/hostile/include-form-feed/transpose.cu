// transpose: a shared-memory tile, and behind a form feed and a vertical tab (whitespace to the compiler, which
// a reader of #include lines that skips spaces and tabs only does not skip), an #include of a file of the
// grading machine by its path, whose text the compiler's messages would quote: the file is no C++, so every
// line of it is an error, each shown with the line it is about.
//
// (hostile corpus: what the file includes is decided by what the compiler read (starter/tools/includes.py),
// before anything is compiled: refused by the build gate's includes rule; and a build log quotes only the
// student's own lines (grader/backends/compiler_log.py). The file's text must appear nowhere a student reads.)
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"
#include "/etc/ld.so.conf"

namespace {

constexpr int kTile = 32;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[kTile][kTile + 1];
    const int x = blockIdx.x * kTile + threadIdx.x, y = blockIdx.y * kTile + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[static_cast<std::int64_t>(y) * cols + x];
    __syncthreads();
    const int ox = blockIdx.y * kTile + threadIdx.x, oy = blockIdx.x * kTile + threadIdx.y;
    if (ox < rows && oy < cols) out[static_cast<std::int64_t>(oy) * rows + ox] = tile[threadIdx.x][threadIdx.y];
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 block(kTile, kTile), grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
