// fill — a 2-D grid of 2-D blocks writes out[r * cols + c] = r * cols + c.
//
// (hostile corpus: every call first waits 1.5 s on the GPU, so every case takes about 3 s, just under the
// fast rubric's 5 s case limit: without a time budget the submission holds the GPU for cases x 3 s)
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

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[static_cast<long long>(r) * cols + c] = r * cols + c;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    hold<<<1, 1>>>(kHoldNanoseconds);
    CUDA_CHECK_LAUNCH();
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
