// matmul_tiled: 16x16 shared-memory tiles, any size. The host side plans its launch with the standard
// library: a vector of candidate tile shapes, std::array, std::sort with a lambda, std::max_element.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "cuda_check.h"
#include "tasks.h"

constexpr int kTile = 16;

template <typename T>
__global__ void tiled_kernel(const T* a, const T* b, T* c, int m, int n, int k) {
    __shared__ T as[kTile][kTile];
    __shared__ T bs[kTile][kTile];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    T sum = 0;
    for (int t = 0; t < k; t += kTile) {
        as[threadIdx.y][threadIdx.x] = row < m && t + threadIdx.x < k ? a[row * k + t + threadIdx.x] : T(0);
        bs[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < k ? b[(t + threadIdx.y) * n + col] : T(0);
        __syncthreads();
        for (int i = 0; i < kTile; ++i) sum += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = sum;
}

namespace {
struct Plan {
    int blocks_x, blocks_y;
    long waste;  // threads launched beyond the matrix
};

Plan plan(int m, int n) {
    std::vector<Plan> options;
    const std::array<int, 1> tiles{kTile};
    for (int tile : tiles) {
        const int bx = (n + tile - 1) / tile, by = (m + tile - 1) / tile;
        options.push_back({bx, by, static_cast<long>(bx) * by * tile * tile - static_cast<long>(m) * n});
    }
    std::sort(options.begin(), options.end(), [](const Plan& x, const Plan& y) { return x.waste < y.waste; });
    auto widest = std::max_element(options.begin(), options.end(),
                                   [](const Plan& x, const Plan& y) { return x.blocks_x < y.blocks_x; });
    return widest == options.end() ? options.front() : *widest;
}
}  // namespace

template <typename T>
void matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k) {
    const Plan p = plan(m, n);
    tiled_kernel<<<dim3(p.blocks_x, p.blocks_y), dim3(kTile, kTile)>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)
