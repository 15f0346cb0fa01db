// PLANTED BUG: the sum is computed in float for every element type. An int32
// value above 2^24 = 16,777,216 is rounded on its way through float, so large
// int32 sums come out a little off.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, int rows, int cols) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        const long long i = static_cast<long long>(row) * cols + col;
        const float sum = static_cast<float>(a[i]) + static_cast<float>(b[i]);  // BUG: T, not float
        c[i] = static_cast<T>(sum);
    }
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    add_kernel<<<grid, block>>>(a, b, c, rows, cols);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
