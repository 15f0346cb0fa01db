// The inverted-indexing experiment: the naive matmul with its thread mapping
// turned around. It computes the same c = a · b, one thread per element, and
// passes every check; only which index threadIdx.x walks is different.
//
// Coalesced (kernels/matmul_naive.cu): threadIdx.x walks the column j, so at
// each step p the 32 threads of a warp read 32 adjacent floats of row p of b
// (one 128-byte transaction), all read the same a[i][p] (a broadcast), and at
// the end write 32 adjacent floats of c.
//
// Inverted (here): threadIdx.x walks the row i, so at each step the 32 threads
// read a[i][p] from 32 different rows of a, k floats apart (32 transactions
// for 32 useful floats), and write 32 elements of c a whole row apart. The
// bench times both, so the plot shows how much that costs on your GPU.
#include <stdexcept>

#include "cuda_check.h"
#include "gpu_baselines.h"

namespace {

__global__ void matmul_naive_inverted_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;  // inverted: x walks down a column of c
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    const float* a_row = a + static_cast<std::int64_t>(row) * k;
    float acc = 0;
    for (int p = 0; p < k; ++p) acc += a_row[p] * b[static_cast<std::int64_t>(p) * n + col];
    c[static_cast<std::int64_t>(row) * n + col] = acc;
}

void matmul_naive_inverted(const float* a, const float* b, float* c, int m, int n, int k) {
    const dim3 block(32, 8);  // the same block as the coalesced solution, x and y swapped in meaning
    const dim3 grid((m + block.x - 1) / block.x, (n + block.y - 1) / block.y);
    matmul_naive_inverted_kernel<<<grid, block>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

}  // namespace

Task naive_inverted_task() {
    const Task* naive = find_task("matmul_naive");
    if (!naive) throw std::logic_error("the bench needs task matmul_naive, which the registry lacks");
    Task t = *naive;
    t.dtypes = {DType::f32};
    t.launch = [](DType d, const Shape& s, const DeviceArgs& args) {
        if (d != DType::f32) throw std::logic_error("the inverted-indexing experiment is float32 only");
        matmul_naive_inverted(static_cast<const float*>(args.inputs[0]), static_cast<const float*>(args.inputs[1]),
                              static_cast<float*>(args.output), static_cast<int>(s.m()), static_cast<int>(s.n()),
                              static_cast<int>(s.k()));
    };
    return t;
}
