// fill — a 2-D grid of 2-D blocks of 32 x 8 threads, one element each: out[r * cols + c] = r * cols + c.
//
// (hostile corpus: an honest kernel; the attack is the nickname, a spreadsheet formula (nickname.txt), which
// every CSV the grader writes must show as text: grader/reports/spreadsheet.py.)
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[static_cast<std::int64_t>(r) * cols + c] = r * cols + c;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
