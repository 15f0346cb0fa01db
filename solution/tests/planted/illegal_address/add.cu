// PLANTED FAULT: writes a gigabyte past the end of the output, which the GPU
// reports as an illegal address. The harness must report status `error` with
// CUDA's message and exit nonzero, not crash or hang.
#include "cuda_check.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) c[i + (1LL << 28)] = a[i] + b[i];  // BUG: far out of bounds
}

}  // namespace

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    const long long n = static_cast<long long>(rows) * cols;
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
