// Textbook kernels (see textbook.h), compiled by cudacpu.py for the tests.
#include "textbook.h"

namespace textbook {
namespace {

__global__ void matmul_naive_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float sum = 0.0f;
        for (int p = 0; p < k; ++p) sum += a[row * k + p] * b[p * n + col];
        c[row * n + col] = sum;
    }
}

constexpr int TILE = 16;

__global__ void matmul_shared_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (k + TILE - 1) / TILE; ++t) {
        as[ty][tx] = (row < m && t * TILE + tx < k) ? a[row * k + t * TILE + tx] : 0.0f;
        bs[ty][tx] = (col < n && t * TILE + ty < k) ? b[(t * TILE + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < TILE; ++p) sum += as[ty][p] * bs[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = sum;
}

constexpr int BM = 64, BN = 64, BK = 8, TM = 4, TN = 4;

__global__ void __launch_bounds__(256) matmul_register_blocked_kernel(const float* __restrict__ a,
                                                                       const float* __restrict__ b,
                                                                       float* __restrict__ c, int m, int n, int k) {
    __shared__ float as[BK][BM];  // a's slab, transposed: as[p][row]
    __shared__ float bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);  // this thread's 4 x 4 tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < k; k0 += BK) {
        // 256 threads load 64 x 8 of a and 8 x 64 of b: two elements each.
        for (int i = tid; i < BM * BK; i += blockDim.x) {
            const int r = i / BK, p = i % BK;
            as[p][r] = (row0 + r < m && k0 + p < k) ? a[(row0 + r) * k + k0 + p] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += blockDim.x) {
            const int p = i / BN, cc = i % BN;
            bs[p][cc] = (k0 + p < k && col0 + cc < n) ? b[(k0 + p) * n + col0 + cc] : 0.0f;
        }
        __syncthreads();
        for (int p = 0; p < BK; ++p) {
            float ar[TM], br[TN];
            for (int i = 0; i < TM; ++i) ar[i] = as[p][trow * TM + i];
            for (int j = 0; j < TN; ++j) br[j] = bs[p][tcol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += ar[i] * br[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + trow * TM + i, cc = col0 + tcol * TN + j;
            if (r < m && cc < n) c[r * n + cc] = acc[i][j];
        }
}

__global__ void transpose_padded_kernel(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[32][33];
    const int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    const int tx = blockIdx.y * 32 + threadIdx.x;  // a column of `in` is a row of `out`
    const int ty = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (tx < rows && ty + j < cols) out[(ty + j) * rows + tx] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void dot_shared_tree_kernel(const float* x, const float* y, float* result, int n) {
    extern __shared__ float partial[];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

__global__ void dot_warp_shuffle_kernel(const float* x, const float* y, float* result, int n) {
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i] * y[i];
    for (int offset = warpSize / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if ((threadIdx.x & (warpSize - 1)) == 0) atomicAdd(result, sum);
}

int blocks_for(int n, int threads) {
    const int b = (n + threads - 1) / threads;
    return b < 256 ? b : 256;
}

}  // namespace

void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, n, k);
}

void matmul_shared(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul_shared_kernel<<<grid, block>>>(a, b, c, m, n, k);
}

void matmul_register_blocked(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    matmul_register_blocked_kernel<<<grid, (BM / TM) * (BN / TN)>>>(a, b, c, m, n, k);
}

void transpose_padded(const float* in, float* out, int rows, int cols) {
    dim3 block(32, 8), grid((cols + 31) / 32, (rows + 31) / 32);
    transpose_padded_kernel<<<grid, block>>>(in, out, rows, cols);
}

void dot_shared_tree(const float* x, const float* y, float* result, int n) {
    cudaMemset(result, 0, sizeof(float));
    const int threads = 128;
    dot_shared_tree_kernel<<<blocks_for(n, threads), threads, threads * sizeof(float)>>>(x, y, result, n);
}

void dot_warp_shuffle(const float* x, const float* y, float* result, int n) {
    cudaMemsetAsync(result, 0, sizeof(float));
    const int threads = 256;
    dot_warp_shuffle_kernel<<<blocks_for(n, threads), threads, 0, 0>>>(x, y, result, n);
}

}  // namespace textbook
