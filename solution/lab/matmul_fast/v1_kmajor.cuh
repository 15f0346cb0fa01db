// matmul_fast lab, version 1: the k-major-a kernel (variants 30-36), with the copy knobs
// of version 1 (looped or written-out copies). The shipped kernel is this one, cut down to the
// chosen knobs and given a piece of k per block.
// Frozen: the code behind the numbers of docs/gpu-runs/2026-11-21-h200*.md and
// 2026-11-21-h100-matmul-fast.md, as solution/kernels/matmul_fast.cu held it before the
// shape dispatch (commit 754543d). Kept as it was so that those numbers can be reproduced;
// the shipped kernel's descendants of these helpers live in solution/kernels/matmul_fast.cu.
#pragma once

#include "v1_config.cuh"

namespace lab::v1 {

// The same tiles with a's slab stored k-major (a_t[k][row]): a thread reads its
// 8 rows of one k-step as two float4, so a's fragment takes 8 registers instead
// of 32, and the loads of the next k-step fit beside the math. A transpose cannot
// be a cp.async: a's slab goes global -> registers -> shared, loaded while the
// previous slab is computed, stored after it (two shared buffers); b is unchanged.
template <class Base>
struct KMajorA : Base {
    static constexpr int A_STAGE = Base::BK * Base::BM;  // one a_t buffer; there are two
    static constexpr int A_LOADS = Base::BM * Base::BK / 4 / Base::THREADS;  // float4 a thread stages per slab
    static constexpr std::size_t SMEM_BYTES =
        (std::size_t(2) * A_STAGE + std::size_t(Base::STAGES) * Base::B_STAGE) * sizeof(float);
    static_assert(Base::STAGES == 2, "a's two buffers and b's stages turn over together");
    static_assert(Base::BM * Base::BK % (4 * Base::THREADS) == 0, "every thread stages the same number of float4");
    static_assert(SMEM_BYTES <= 227 * 1024, "Hopper gives a block at most 227 KB of shared memory");
};

template <class C> struct IsKMajorA : std::false_type {};
template <class Base> struct IsKMajorA<KMajorA<Base>> : std::true_type {};

// a's slab [k0, k0 + BK) x [m0, m0 + BM) into registers, 4 k-steps of one row per float4
// (zeros past the matrix). Consecutive threads take consecutive rows, so the
// transposed stores below are conflict-free.
template <class C, bool Vec16>
__device__ void stage_a_slab(float4 (&staged)[C::A_LOADS], const float* a, int m, int k, int lda, int m0, int k0,
                             int tid) {
#pragma unroll
    for (int i = 0; i < C::A_LOADS; ++i) {
        const int chunk = tid + i * C::THREADS, row = chunk % C::BM, kc = chunk / C::BM * 4;
        const bool row_ok = m0 + row < m;
        const float* src = a + std::int64_t(row_ok ? m0 + row : 0) * lda + k0 + kc;
        if constexpr (Vec16) {  // rows padded to 4 floats: a float4 that starts before k stays in its row
            staged[i] = row_ok && k0 + kc < k ? *reinterpret_cast<const float4*>(src) : make_float4(0, 0, 0, 0);
        } else {
            staged[i].x = row_ok && k0 + kc < k ? src[0] : 0.0f;
            staged[i].y = row_ok && k0 + kc + 1 < k ? src[1] : 0.0f;
            staged[i].z = row_ok && k0 + kc + 2 < k ? src[2] : 0.0f;
            staged[i].w = row_ok && k0 + kc + 3 < k ? src[3] : 0.0f;
        }
    }
}

template <class C>
__device__ void store_a_slab(float* a_t, const float4 (&staged)[C::A_LOADS], int tid) {
#pragma unroll
    for (int i = 0; i < C::A_LOADS; ++i) {
        const int chunk = tid + i * C::THREADS, row = chunk % C::BM, kc = chunk / C::BM * 4;
        a_t[(kc + 0) * C::BM + row] = staged[i].x;
        a_t[(kc + 1) * C::BM + row] = staged[i].y;
        a_t[(kc + 2) * C::BM + row] = staged[i].z;
        a_t[(kc + 3) * C::BM + row] = staged[i].w;
    }
}

// matmul_fast_kernel with a k-major a (KMajorA): the same work split, threads and results.
template <class C, bool Vec16>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS)
    matmul_fast_kmajor_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                              int n, int k, int lda, int ldb, int ldc, bool vector_store) {
    constexpr int TN = C::TN;
    extern __shared__ __align__(16) float smem[];
    float* a_tiles = smem;                    // 2 x a_t[BK][BM]
    float* b_tiles = smem + 2 * C::A_STAGE;   // 2 x b[BK][BN]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int2 tile = block_tile<C>();
    const int m0 = tile.x * C::BM, n0 = tile.y * C::BN;
    const int a_row0 = (warp / C::WARPS_N) * 64 + (lane / 4) * 4;
    const int b_col0 = (warp % C::WARPS_N) * 4 * TN + (lane % 4) * 4;

    float acc[8][TN] = {};
    const int slabs = (k + C::BK - 1) / C::BK;
    float4 staged[C::A_LOADS];

    stage_a_slab<C, Vec16>(staged, a, m, k, lda, m0, 0, tid);
    store_a_slab<C>(a_tiles, staged, tid);
    copy_b_slab<C, Vec16>(b_tiles, b, n, k, ldb, n0, 0, tid);
    copy_commit();
    copy_wait<0>();
    __syncthreads();

    for (int t = 0; t < slabs; ++t) {
        const int next = (t + 1) % 2;
        const bool more = t + 1 < slabs;
        if (more) {  // slab t + 1 starts on its way: a into registers, b into the buffer slab t - 1 left
            stage_a_slab<C, Vec16>(staged, a, m, k, lda, m0, (t + 1) * C::BK, tid);
            copy_b_slab<C, Vec16>(b_tiles + next * C::B_STAGE, b, n, k, ldb, n0, (t + 1) * C::BK, tid);
        }
        copy_commit();

        const float* a_s = a_tiles + (t % 2) * C::A_STAGE;
        const float* b_s = b_tiles + (t % 2) * C::B_STAGE;
#pragma unroll
        for (int kk = 0; kk < C::BK; ++kk) {
            const float4 lo = *reinterpret_cast<const float4*>(&a_s[kk * C::BM + a_row0]);
            const float4 hi = *reinterpret_cast<const float4*>(&a_s[kk * C::BM + a_row0 + 32]);
            const float av[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            float bv[TN];
            read_b_row<C>(bv, b_s, kk, b_col0);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }

        if (more) store_a_slab<C>(a_tiles + next * C::A_STAGE, staged, tid);  // its buffer is slab t - 1's: free
        copy_wait<0>();
        __syncthreads();  // slab t + 1 is in place, and everyone is done with slab t
    }
    store_tile<C>(c, acc, m, n, ldc, m0 + a_row0, n0 + b_col0, vector_store);
}

}  // namespace lab::v1
