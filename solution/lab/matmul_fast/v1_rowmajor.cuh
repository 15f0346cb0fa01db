// matmul_fast lab, version 1: the row-major-a kernel (variants 0-24), superseded by the
// k-major one. Both a and b go global -> shared by cp.async, a stored as rows (a_s[row][k]), so
// a thread's fragment of a is 8 rows x 4 k-steps: 32 registers (8 float4), which leaves too few
// to load the next k-step beside the math. On the H100 its best (17) reached 80% of cuBLAS at
// 4096^3 against the k-major kernel's 92.6%.
// Frozen: the code behind the numbers of docs/gpu-runs/2026-11-21-h200*.md and
// 2026-11-21-h100-matmul-fast.md, as solution/kernels/matmul_fast.cu held it before the
// shape dispatch (commit 754543d). Kept as it was so that those numbers can be reproduced;
// the shipped kernel's descendants of these helpers live in solution/kernels/matmul_fast.cu.
#pragma once

#include "v1_config.cuh"

namespace lab::v1 {

template <class C, bool Vec16>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS)
    matmul_fast_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n,
                       int k, int lda, int ldb, int ldc, bool vector_store) {
    constexpr int TN = C::TN;
    const auto component = [](const float4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; };
    extern __shared__ __align__(16) float smem[];
    float* a_tiles = smem;
    float* b_tiles = smem + C::STAGES * C::A_STAGE;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int2 tile = block_tile<C>();
    const int m0 = tile.x * C::BM, n0 = tile.y * C::BN;
    // Shared-memory offsets of this thread's first row of a and first column of b.
    const int a_row0 = (warp / C::WARPS_N) * 64 + (lane / 4) * 4;
    const int b_col0 = (warp % C::WARPS_N) * 4 * TN + (lane % 4) * 4;

    float acc[8][TN] = {};
    const int slabs = (k + C::BK - 1) / C::BK;

    for (int s = 0; s < C::STAGES - 1; ++s) {
        if (s < slabs)
            load_slab<C, Vec16>(a_tiles + s * C::A_STAGE, b_tiles + s * C::B_STAGE, a, b, m, n, k, lda, ldb, m0, n0, s * C::BK,
                                tid);
        copy_commit();
    }

    for (int t = 0; t < slabs; ++t) {
        copy_wait<C::STAGES - 2>();  // this thread's copies of slab t have landed ...
        __syncthreads();             // ... and everyone's; everyone is done with slab t - 1
        const int next = t + C::STAGES - 1;
        if (next < slabs)
            load_slab<C, Vec16>(a_tiles + (next % C::STAGES) * C::A_STAGE, b_tiles + (next % C::STAGES) * C::B_STAGE,
                                a, b, m, n, k, lda, ldb, m0, n0, next * C::BK, tid);
        copy_commit();  // an empty group near the end keeps the wait count right

        const float* a_s = a_tiles + (t % C::STAGES) * C::A_STAGE;
        const float* b_s = b_tiles + (t % C::STAGES) * C::B_STAGE;
#pragma unroll C::KK_UNROLL
        for (int kk = 0; kk < C::BK; kk += 4) {
            float4 a_frag[8];  // 8 rows x 4 k-steps
#pragma unroll
            for (int i = 0; i < 8; ++i)
                a_frag[i] = *reinterpret_cast<const float4*>(&a_s[(a_row0 + (i / 4) * 32 + i % 4) * C::A_LD + kk]);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                float bv[TN];
                read_b_row<C>(bv, b_s, kk + q, b_col0);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const float av = component(a_frag[i], q);
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av, bv[j], acc[i][j]);
                }
            }
        }
    }
    copy_wait<0>();

    store_tile<C>(c, acc, m, n, ldc, m0 + a_row0, n0 + b_col0, vector_store);
}

}  // namespace lab::v1
