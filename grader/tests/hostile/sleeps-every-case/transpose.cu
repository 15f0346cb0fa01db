// transpose — one thread per element: out[c * rows + r] = in[r * cols + c].
//
// (hostile corpus: every call first waits 1.5 s on the GPU, as in fill.cu)
#include "cuda_check.h"
#include "tasks.h"

namespace {

// Holds the GPU for a fixed stretch of wall clock in one thread, then lets the real work run: the
// submission looks like slow code, and each case ends just under its time limit.
constexpr long long kHoldNanoseconds = 1500000000LL;  // 1.5 s a call: a check (two calls) takes about 3 s

__device__ long long now_ns() {
#ifdef CUDACPU
    return clock64();  // the CPU backend counts nanoseconds
#else
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}

__global__ void hold(long long ns) {
    const long long start = now_ns();
    while (now_ns() - start < ns) __nanosleep(100000);
}

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[static_cast<long long>(c) * rows + r] = in[static_cast<long long>(r) * cols + c];
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    hold<<<1, 1>>>(kHoldNanoseconds);
    CUDA_CHECK_LAUNCH();
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
