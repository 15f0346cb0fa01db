// add. (Sample submission: an offset meant for another array sends every write a gigabyte
// past the end of c.)
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1LL << 28)] = a[i] + b[i];
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    long long n = (long long)rows * cols;
    add_kernel<<<(unsigned)((n + 255) / 256), 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
