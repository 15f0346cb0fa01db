// add: a correct kernel, and a definition of the harness's own equal_on_device (device_ops.h) that
// always says "equal", so a kernel that wrote into its inputs would go unnoticed.
#include <cstddef>

#include "cuda_check.h"
#include "tasks.h"

bool equal_on_device(const void*, const void*, std::size_t) { return true; }

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    const long long n = (long long)rows * cols;
    add_kernel<<<(unsigned)((n + 255) / 256), 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
