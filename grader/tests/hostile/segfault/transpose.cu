// transpose — out = in^T through a shared-memory tile.
//
// (hostile corpus: the launcher caches its launch plan in a host struct it
// never allocates, and crashes the harness process with SIGSEGV)
#include "cuda_check.h"
#include "tasks.h"

namespace {

constexpr int kTile = 32;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[kTile][kTile + 1];
    const int c = blockIdx.x * kTile + threadIdx.x;
    for (int dy = threadIdx.y; dy < kTile; dy += blockDim.y) {
        const int r = blockIdx.y * kTile + dy;
        if (r < rows && c < cols) tile[dy][threadIdx.x] = in[static_cast<long long>(r) * cols + c];
    }
    __syncthreads();
    const int oc = blockIdx.y * kTile + threadIdx.x;
    for (int dy = threadIdx.y; dy < kTile; dy += blockDim.y) {
        const int orow = blockIdx.x * kTile + dy;
        if (orow < cols && oc < rows) out[static_cast<long long>(orow) * rows + oc] = tile[threadIdx.x][dy];
    }
}

}  // namespace

struct TransposePlan {
    int rows, cols;
    dim3 grid, block;
};
TransposePlan* plan = nullptr;  // meant to be set up once... never is

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    plan->rows = rows;  // a null pointer: SIGSEGV
    plan->cols = cols;
    plan->block = dim3(kTile, 8);
    plan->grid = dim3((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<plan->grid, plan->block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
