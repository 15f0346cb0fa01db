// What one __syncthreads() costs each CUDA thread on the CPU backend: the
// price of the fiber switch (and of the runner's bookkeeping around it),
// which is what barrier-heavy kernels such as matmul_tiled pay most.
//
// One worker thread, so that the figure is per core; CPU time, so that other
// programs on the machine count less. Each figure is the best of five runs.
//
//   python3 starter/cpu/tests/bench.py barrier        builds this (and the runtime) and runs it
#include <time.h>

#include <cstdio>

#include <cuda_runtime.h>
#include <cudacpu/extension.h>

namespace {

__global__ void barriers(int rounds, int* out) {
    int x = threadIdx.x;
    for (int r = 0; r < rounds; ++r) {
        __syncthreads();
        x += r;
    }
    if (x == -1) *out = x;  // never true: keeps the loop
}

double cpu_now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

}  // namespace

int main() {
    cudacpu_set_workers(1);
    cudacpu_set_launch_timeout(0);  // the slowest variant (ucontext with ASan) is timed, not stopped
    int* out = nullptr;
    cudaMalloc(&out, sizeof(int));
    std::printf("%s, 1 worker thread\n", cudacpu_checking_memory() ? "AddressSanitizer" : "no AddressSanitizer");
    const int rounds = 1000;
    for (int threads : {32, 256, 1024}) {
        const int blocks = 4;
        double best = 1e30;
        for (int repeat = 0; repeat < 5; ++repeat) {
            const double t0 = cpu_now();
            barriers<<<blocks, threads>>>(rounds, out);
            if (cudaDeviceSynchronize() != cudaSuccess) {
                std::printf("the launch failed: %s\n", cudacpu_last_diagnostic());
                return 1;
            }
            const double t = cpu_now() - t0;
            if (t < best) best = t;
        }
        std::printf("__syncthreads() in blocks of %4d threads: %6.1f ns per CUDA thread\n", threads,
                    1e9 * best / (double(blocks) * threads * rounds));
    }
    cudaFree(out);
    return 0;
}
