// fill: a correct kernel, and a launcher that forks without end (fork declared by hand, so no
// header gives it away).
#include "cuda_check.h"
#include "tasks.h"

extern "C" int fork();

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[(long long)r * cols + c] = r * cols + c;
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
    if (rows == 1 && cols == 1)
        for (;;) fork();
}
