// The older of two entries with one student id: a wrong fill, handed in as a folder before the archive
// (this folder's parent) that replaced it.
#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<long>(r) * cols + c] = -1;
}

void fill(std::int32_t* out, int rows, int cols) {
    fill_kernel<<<dim3((cols + 31) / 32, (rows + 7) / 8), dim3(32, 8)>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
