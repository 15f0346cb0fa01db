// PLANTED HANG: the loop waits for a flag nothing ever sets. The harness's
// watchdog must stop the case, report it, and exit nonzero.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// Device memory the compiler cannot see through: it must read it every time.
__device__ volatile int g_done = 0;

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    while (g_done == 0) {  // BUG: nothing ever sets g_done
    }
    if (r < rows && c < cols) out[static_cast<long long>(r) * cols + c] = r * cols + c;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
