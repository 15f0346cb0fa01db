// add — one thread per element: c = a + b.
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
__global__ void add_kernel(const T* a, const T* b, T* c, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    hold<<<1, 1>>>(kHoldNanoseconds);
    CUDA_CHECK_LAUNCH();
    const long long n = static_cast<long long>(rows) * cols;
    add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
