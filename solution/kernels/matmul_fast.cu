// matmul_fast — reference solution: a register-blocked, warp-tiled FP32 GEMM
// fed by a multi-stage cp.async pipeline. Plain FP32 FFMA: no tensor cores.
//
// Work split
//   block   128 x 128 tile of c, 256 threads = 8 warps arranged 2 (rows) x 4 (cols)
//   warp     64 x 32 tile of c, 32 threads arranged 8 x 4
//   thread    8 x  8 elements of c: rows {0..3, 32..35} + 4*tr, cols {0..3, 16..19} + 4*tc
//            of its warp tile. Splitting each thread's rows and columns in two
//            halves makes a quarter-warp's 16-byte shared-memory reads hit
//            different banks (columns) or the same address (rows).
//
// Data flow per k-slab of 16
//   global -> shared: cp.async, 16 bytes per copy (4 bytes when a row of a or b
//            does not start on a 16-byte boundary), zero-filled past the
//            matrix edges, STAGES slabs in flight so loads overlap the math;
//   shared -> registers: a's tile stays row-major, padded to 20 floats a row,
//            and is read 4 k-steps at a time as float4 (8 rows = 32 values);
//            b's row for one k-step is read as two float4 (8 values);
//   math:    64 FFMA per k-step per thread, 16 FFMA for every 16-byte read.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"
#include "vector4.cuh"

#ifndef MATMUL_FAST_STAGES
#define MATMUL_FAST_STAGES 4
#endif
#ifndef MATMUL_FAST_MIN_BLOCKS
#define MATMUL_FAST_MIN_BLOCKS 2
#endif

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 16;
constexpr int kThreads = 256;
constexpr int kStages = MATMUL_FAST_STAGES;
constexpr int kALd = kBK + 4;  // padded row of a's tile, in floats (rows stay 16-byte aligned)
constexpr int kBLd = kBN;
constexpr int kAStage = kBM * kALd, kBStage = kBK * kBLd;
constexpr std::size_t kSmemBytes = std::size_t(kStages) * (kAStage + kBStage) * sizeof(float);

static_assert(kStages >= 2, "the pipeline needs at least two stages");
static_assert(kBM * kBK % (4 * kThreads) == 0 && kBK * kBN % (4 * kThreads) == 0,
              "every thread copies the same number of 16-byte chunks of each tile");
static_assert((kALd * sizeof(float)) % 16 == 0, "rows of a's tile must stay 16-byte aligned for cp.async");

// Copies `bytes` (4 or 16) from global to shared memory, asynchronously on
// sm_80 and newer. `valid` false zero-fills the destination instead (the
// source address is then not read).
template <int Bytes>
__device__ void copy_async(float* smem, const float* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const int src_bytes = valid ? Bytes : 0;
    if constexpr (Bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
#else
    if constexpr (Bytes == 16)
        *reinterpret_cast<float4*>(smem) = valid ? *reinterpret_cast<const float4*>(gmem) : make_float4(0, 0, 0, 0);
    else
        *smem = valid ? *gmem : 0.0f;
#endif
}

__device__ void copy_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `Pending` committed groups are still in flight.
template <int Pending>
__device__ void copy_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// Loads the k-slab starting at k0 into one pipeline stage. Vec16: rows of a and
// b start on 16-byte boundaries (k % 4 == 0 and n % 4 == 0), so 16-byte copies
// never straddle a row end.
template <bool Vec16>
__device__ void load_slab(float* a_s, float* b_s, const float* a, const float* b, int m, int n, int k, int m0,
                          int n0, int k0, int tid) {
    if constexpr (Vec16) {
        for (int c = tid; c < kBM * kBK / 4; c += kThreads) {
            const int row = c / (kBK / 4), kc = (c % (kBK / 4)) * 4;
            const bool ok = m0 + row < m && k0 + kc < k;
            copy_async<16>(&a_s[row * kALd + kc], ok ? a + std::int64_t(m0 + row) * k + k0 + kc : a, ok);
        }
        for (int c = tid; c < kBK * kBN / 4; c += kThreads) {
            const int row = c / (kBN / 4), nc = (c % (kBN / 4)) * 4;
            const bool ok = k0 + row < k && n0 + nc < n;
            copy_async<16>(&b_s[row * kBLd + nc], ok ? b + std::int64_t(k0 + row) * n + n0 + nc : b, ok);
        }
    } else {
        for (int e = tid; e < kBM * kBK; e += kThreads) {
            const int row = e / kBK, kc = e % kBK;
            const bool ok = m0 + row < m && k0 + kc < k;
            copy_async<4>(&a_s[row * kALd + kc], ok ? a + std::int64_t(m0 + row) * k + k0 + kc : a, ok);
        }
        for (int e = tid; e < kBK * kBN; e += kThreads) {
            const int row = e / kBN, nc = e % kBN;
            const bool ok = k0 + row < k && n0 + nc < n;
            copy_async<4>(&b_s[row * kBLd + nc], ok ? b + std::int64_t(k0 + row) * n + n0 + nc : b, ok);
        }
    }
}

__device__ float component(const float4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

template <bool Vec16>
__global__ void __launch_bounds__(kThreads, MATMUL_FAST_MIN_BLOCKS)
    matmul_fast_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n,
                       int k) {
    extern __shared__ __align__(16) float smem[];
    float* a_tiles = smem;
    float* b_tiles = smem + kStages * kAStage;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
    const int warp_row = (warp / 4) * 64, warp_col = (warp % 4) * 32;
    const int tr = lane / 4, tc = lane % 4;
    // Shared-memory offsets of this thread's first a row and first b column.
    const int a_row0 = warp_row + tr * 4;
    const int b_col0 = warp_col + tc * 4;

    float acc[8][8] = {};
    const int slabs = (k + kBK - 1) / kBK;

    for (int s = 0; s < kStages - 1; ++s) {
        if (s < slabs)
            load_slab<Vec16>(a_tiles + s * kAStage, b_tiles + s * kBStage, a, b, m, n, k, m0, n0, s * kBK, tid);
        copy_commit();
    }

    for (int t = 0; t < slabs; ++t) {
        copy_wait<kStages - 2>();  // this thread's copies of slab t have landed ...
        __syncthreads();           // ... and everyone's; everyone is done with slab t - 1
        const int next = t + kStages - 1;
        if (next < slabs)
            load_slab<Vec16>(a_tiles + (next % kStages) * kAStage, b_tiles + (next % kStages) * kBStage, a, b, m, n,
                             k, m0, n0, next * kBK, tid);
        copy_commit();  // an empty group near the end keeps the wait count right

        const float* a_s = a_tiles + (t % kStages) * kAStage;
        const float* b_s = b_tiles + (t % kStages) * kBStage;
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 4) {
            float4 a_frag[8];  // 8 rows x 4 k-steps
#pragma unroll
            for (int i = 0; i < 8; ++i)
                a_frag[i] = *reinterpret_cast<const float4*>(&a_s[(a_row0 + (i / 4) * 32 + i % 4) * kALd + kk]);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float4 b_lo = *reinterpret_cast<const float4*>(&b_s[(kk + q) * kBLd + b_col0]);
                const float4 b_hi = *reinterpret_cast<const float4*>(&b_s[(kk + q) * kBLd + b_col0 + 16]);
                const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const float av = component(a_frag[i], q);
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av, bv[j], acc[i][j]);
                }
            }
        }
    }
    copy_wait<0>();

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + a_row0 + (i / 4) * 32 + i % 4;
        if (row >= m) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + b_col0 + h * 16;
            float* out = c + std::int64_t(row) * n + col;
            const float* v = &acc[i][h * 4];
            if (Vec16 && col + 3 < n) {
                *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
                for (int j = 0; j < 4; ++j)
                    if (col + j < n) out[j] = v[j];
            }
        }
    }
}

template <bool Vec16>
void launch(const float* a, const float* b, float* c, int m, int n, int k) {
    // More than 48 KB of dynamic shared memory must be asked for once per kernel.
    static const bool configured = [] {
        CUDA_CHECK(cudaFuncSetAttribute(matmul_fast_kernel<Vec16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSmemBytes)));
        return true;
    }();
    (void)configured;
    const dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
    matmul_fast_kernel<Vec16><<<grid, kThreads, kSmemBytes>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}

}  // namespace

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    if (k % 4 == 0 && n % 4 == 0 && aligned16(a, b, c))
        launch<true>(a, b, c, m, n, k);
    else
        launch<false>(a, b, c, m, n, k);
}
