// PLANTED BUG: an off-by-one guard (c < cols - 1) leaves the last column unwritten.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols - 1) out[static_cast<long long>(r) * cols + c] = r * cols + c;  // BUG: cols - 1
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
