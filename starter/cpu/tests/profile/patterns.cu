// Access patterns with known counts, for the performance counters
// (src/profile.cpp). One program, built two ways:
//   - by cudacpu.py with --racecheck and run with CUDA_CPU_PROFILE=FILE: the
//     CPU's counts (solution/tests/test_cpu_profile.py checks them);
//   - by nvcc and run under Nsight Compute: the GPU's counts for the same
//     launches (docs/gpu-runs/device_run.sh, step profile_agreement).
// Each kernel runs once, on its own arrays; the expected counts per warp-level
// instruction are in the comment above it (n = 1 << 18 elements, 256 threads
// per block unless it says otherwise).
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kN = 1 << 18;
constexpr int kBlock = 256;

// Loads and stores: 4 sectors per request, the ideal.
__global__ void coalesced_copy(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

// Loads 32 floats apart: 32 sectors per request where 4 would do.
__global__ void strided_load(const float* in, float* out, int stride) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[(static_cast<long long>(i) * stride) % kN];
}

// Stores 32 floats apart: 32 sectors per store request.
__global__ void strided_store(const float* in, float* out, int stride) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[(static_cast<long long>(i) * stride) % kN] = in[i];
}

// Every lane reads the same float: 1 sector per request, the ideal.
__global__ void broadcast_load(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[blockIdx.x] * 2.0f;
}

// One float past an aligned start: 5 sectors per request where 4 would do.
__global__ void misaligned_copy(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i + 1];
}

// 16-byte accesses: 16 sectors per request, the ideal.
__global__ void float4_copy(const float4* in, float4* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

// 8-byte accesses: 8 sectors per request, the ideal.
__global__ void double_copy(const double* in, double* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

// Blocks of 32x8 threads move a 32x32 tile through shared memory. Stores
// along rows (1 pass); loads down columns of an unpadded [32][32] tile: all
// 32 lanes in one bank, 32 passes.
__global__ void tile_unpadded(const float* in, float* out, int n) {
    __shared__ float tile[32][32];
    const int x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) tile[j][threadIdx.x] = in[(y0 + j) * n + x];
    __syncthreads();
    const int tx = blockIdx.y * 32 + threadIdx.x, ty0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += 8) out[(ty0 + j) * n + tx] = tile[threadIdx.x][j];
}

// The same with a [32][33] tile: a column's 32 words fall in 32 banks, 1 pass.
__global__ void tile_padded(const float* in, float* out, int n) {
    __shared__ float tile[32][33];
    const int x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) tile[j][threadIdx.x] = in[(y0 + j) * n + x];
    __syncthreads();
    const int tx = blockIdx.y * 32 + threadIdx.x, ty0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += 8) out[(ty0 + j) * n + tx] = tile[threadIdx.x][j];
}

// A double tile [32][32] read down a column: each half-warp phase has 16
// lanes in the same two banks, 16 passes each.
__global__ void tile_double_unpadded(const double* in, double* out, int n) {
    __shared__ double tile[32][32];
    const int x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) tile[j][threadIdx.x] = in[(y0 + j) * n + x];
    __syncthreads();
    const int tx = blockIdx.y * 32 + threadIdx.x, ty0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += 8) out[(ty0 + j) * n + tx] = tile[threadIdx.x][j];
}

// Every lane reads the same shared word: a broadcast, 1 pass.
__global__ void shared_broadcast(const float* in, float* out) {
    __shared__ float value[kBlock];
    value[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = value[0] + value[threadIdx.x];
}

// Lanes 2 words apart in shared memory: 2 lanes per bank, 2 passes.
__global__ void shared_stride2(const float* in, float* out) {
    __shared__ float value[2 * kBlock];
    value[2 * threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = value[2 * threadIdx.x];
}

// Odd and even lanes load from different arrays: on the CPU two loads of 16
// lanes each; nvcc turns the branch into one load of a selected address (32
// lanes, 8 sectors): the same sectors, half the requests.
__global__ void divergent_branch(const float* a, const float* b, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v;
    if (threadIdx.x % 2) v = a[i];
    else v = b[i];
    out[i] = v;
}

// Odd lanes run a loop of 16 loads, even lanes one load: a branch no compiler
// can remove. Each load runs with 16 of 32 lanes, 4 sectors per request.
__global__ void divergent_loop(const float* a, const float* b, float* out, int steps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (threadIdx.x % 2) {
        for (int j = 0; j < steps; ++j) v += a[(i + j * 1024) % kN];
    } else {
        v = b[i] * 3.0f;
    }
    out[i] = v;
}

// A bounds check on the last, partial warp only: n = kN - 16.
__global__ void edge_guard(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// One atomicAdd per block, by its thread 0.
__global__ void block_atomic(const float* in, float* sum) {
    if (threadIdx.x == 0) atomicAdd(sum, in[blockIdx.x]);
}

void finish(const char* name) {
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("ran %s\n", name);
}

template <typename T>
T* device_array(std::size_t n) {
    T* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    CUDA_CHECK(cudaMemset(p, 0, n * sizeof(T)));
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    // With names: only those kernels run (an ncu run may want one at a time).
    auto wanted = [&](const char* name) {
        if (argc < 2) return true;
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], name) == 0) return true;
        return false;
    };
    float* a = device_array<float>(kN + 64);
    float* b = device_array<float>(kN + 64);
    float* out = device_array<float>(kN + 64);
    double* da = device_array<double>(kN);
    double* dout = device_array<double>(kN);
    const dim3 grid(kN / kBlock), block(kBlock);
    const int side = 512;  // the tiles' matrices: 512 x 512 = kN
    const dim3 tile_grid(side / 32, side / 32), tile_block(32, 8);
    // Launches are written out: the CPU backend rewrites launches in the source, not inside macros.
    if (wanted("coalesced_copy")) {
        coalesced_copy<<<grid, block>>>(a, out);
        finish("coalesced_copy");
    }
    if (wanted("strided_load")) {
        strided_load<<<grid, block>>>(a, out, 32);
        finish("strided_load");
    }
    if (wanted("strided_store")) {
        strided_store<<<grid, block>>>(a, out, 32);
        finish("strided_store");
    }
    if (wanted("broadcast_load")) {
        broadcast_load<<<grid, block>>>(a, out);
        finish("broadcast_load");
    }
    if (wanted("misaligned_copy")) {
        misaligned_copy<<<grid, block>>>(a, out);
        finish("misaligned_copy");
    }
    if (wanted("float4_copy")) {
        float4_copy<<<dim3(kN / 4 / kBlock), block>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<float4*>(out));
        finish("float4_copy");
    }
    if (wanted("double_copy")) {
        double_copy<<<grid, block>>>(da, dout);
        finish("double_copy");
    }
    if (wanted("tile_unpadded")) {
        tile_unpadded<<<tile_grid, tile_block>>>(a, out, side);
        finish("tile_unpadded");
    }
    if (wanted("tile_padded")) {
        tile_padded<<<tile_grid, tile_block>>>(a, out, side);
        finish("tile_padded");
    }
    if (wanted("tile_double_unpadded")) {
        tile_double_unpadded<<<tile_grid, tile_block>>>(da, dout, side);
        finish("tile_double_unpadded");
    }
    if (wanted("shared_broadcast")) {
        shared_broadcast<<<grid, block>>>(a, out);
        finish("shared_broadcast");
    }
    if (wanted("shared_stride2")) {
        shared_stride2<<<grid, block>>>(a, out);
        finish("shared_stride2");
    }
    if (wanted("divergent_branch")) {
        divergent_branch<<<grid, block>>>(a, b, out);
        finish("divergent_branch");
    }
    if (wanted("divergent_loop")) {
        divergent_loop<<<grid, block>>>(a, b, out, 16);
        finish("divergent_loop");
    }
    if (wanted("edge_guard")) {
        edge_guard<<<grid, block>>>(a, out, kN - 16);
        finish("edge_guard");
    }
    if (wanted("block_atomic")) {
        block_atomic<<<grid, block>>>(a, out);
        finish("block_atomic");
    }
    for (void* p : std::vector<void*>{a, b, out, da, dout}) CUDA_CHECK(cudaFree(p));
    return 0;
}
