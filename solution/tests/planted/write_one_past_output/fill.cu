// PLANTED BUG: the guard is i <= rows * cols, so one thread writes
// out[rows * cols], one element past the end of the output; every element of
// the output is right. A normal run finds the store in the poisoned guard
// region after the output; the sanitizer run, where the output ends its
// allocation, leaves it to compute-sanitizer memcheck (or AddressSanitizer on
// the CPU backend).
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kThreads = 256;

__global__ void fill_kernel(std::int32_t* out, long long total) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i <= total) out[i] = static_cast<std::int32_t>(i);  // BUG: i <= total
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const long long total = static_cast<long long>(rows) * cols;
    fill_kernel<<<static_cast<unsigned>(total / kThreads + 1), kThreads>>>(out, total);
    CUDA_CHECK_LAUNCH();
}
