// transpose — through a 32 x 32 shared-memory tile; the launch configuration is worked out once, when the
// program starts, by the constructor of a global object of the file's own type (a "table of block shapes").
// Code that runs before the harness's main can change the process the harness is about to set up (its
// streams, its device, its signal handling) before the harness has checked anything.
//
// (hostile corpus: the kernel is correct, and the constructor here only fills the table: the build gate's
// no-static-constructors rule refuses the file for what its object would run at start-up, on both backends.
// A function-local static, initialized on the first call, is allowed.)
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;

struct LaunchTable {
    dim3 block;
    int rows_per_pass;
    LaunchTable() : block(kTile, 8), rows_per_pass(8) {
        int device = 0;
        cudaDeviceProp prop;
        if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess &&
            prop.maxThreadsPerBlock >= kTile * kTile) {
            block = dim3(kTile, kTile);
            rows_per_pass = kTile;
        }
    }
};

LaunchTable table;  // built before main

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols, int step) {
    __shared__ T tile[kTile][kTile + 1];
    const int x = blockIdx.x * kTile + threadIdx.x;
    for (int dy = threadIdx.y; dy < kTile; dy += step) {
        const int y = blockIdx.y * kTile + dy;
        if (x < cols && y < rows) tile[dy][threadIdx.x] = in[static_cast<std::int64_t>(y) * cols + x];
    }
    __syncthreads();
    const int ox = blockIdx.y * kTile + threadIdx.x;
    for (int dy = threadIdx.y; dy < kTile; dy += step) {
        const int oy = blockIdx.x * kTile + dy;
        if (ox < rows && oy < cols) out[static_cast<std::int64_t>(oy) * rows + ox] = tile[threadIdx.x][dy];
    }
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<grid, table.block>>>(in, out, rows, cols, table.rows_per_pass);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
