// matmul_fast lab, version 1: the tile configuration (Config) and the copy,
// tile-order and store helpers both version-1 kernels share.
// Frozen: the code behind the numbers of docs/gpu-runs/2026-11-21-h200*.md and
// 2026-11-21-h100-matmul-fast.md, as solution/kernels/matmul_fast.cu held it before the
// shape dispatch (commit 754543d). Kept as it was so that those numbers can be reproduced;
// the shipped kernel's descendants of these helpers live in solution/kernels/matmul_fast.cu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda_check.h"
#include "tasks.h"

namespace lab::v1 {

// Whether every pointer is 16-byte aligned (cudaMalloc gives 256). Each kernel file
// stands alone, as a submission must: the grader takes task files only.
template <typename... P>
bool aligned16(const P*... p) {
    return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}

template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int TN_, int STAGES_, int MIN_BLOCKS_,
          int GROUP_M_ = 0, bool UNROLLED_COPIES_ = false, int KK_UNROLL_ = 0>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, TN = TN_;
    static constexpr int STAGES = STAGES_, MIN_BLOCKS = MIN_BLOCKS_;
    // Blocks run in groups of GROUP_M block rows, column by column, so the
    // blocks resident at one time share rows of a and columns of b in L2 (0: row by row).
    static constexpr int GROUP_M = GROUP_M_;
    // How a slab's copies are issued: a loop strided by the block's threads, or
    // each thread's fixed number of copies written out (no loop, no branches).
    static constexpr bool UNROLLED_COPIES = UNROLLED_COPIES_;
    // How many 4-k-step groups of a slab the math loop unrolls (0: all of them).
    // A fully unrolled BK = 32 slab is ~4,700 instructions (75 KB of code).
    static constexpr int KK_UNROLL = KK_UNROLL_ == 0 ? BK_ / 4 : KK_UNROLL_;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int A_LD = BK + 4;  // padded row of a's tile, in floats
    static constexpr int B_LD = BN;
    static constexpr int A_STAGE = BM * A_LD, B_STAGE = BK * B_LD;
    static constexpr std::size_t SMEM_BYTES = std::size_t(STAGES) * (A_STAGE + B_STAGE) * sizeof(float);

    static_assert(BM == 64 * WARPS_M, "a warp covers 64 rows: 8 lane rows x 8 rows per thread");
    static_assert(BN == 4 * TN * WARPS_N, "a warp covers 4 lane columns x TN columns per thread");
    static_assert(TN % 4 == 0, "each thread's columns come in groups of four");
    static_assert(BK % 4 == 0, "a's tile is read four k-steps at a time");
    static_assert(STAGES >= 2, "the pipeline needs at least two stages");
    static_assert(BM * BK % (4 * THREADS) == 0 && BK * BN % (4 * THREADS) == 0,
                  "every thread copies the same number of 16-byte chunks of each tile");
    static_assert((BK / 4) % KK_UNROLL == 0, "the math loop's unroll divides the slab's 4-k-step groups");
    static_assert(SMEM_BYTES <= 227 * 1024, "Hopper gives a block at most 227 KB of shared memory");
    static_assert((A_LD * 4 * sizeof(float)) % 128 == 64,
                  "rows four apart must land in opposite halves of the banks (conflict-free float4 reads)");
};

// Copies `Bytes` (4 or 16) from global to shared memory, asynchronously on
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

// Calls copy(c) for this thread's share of a tile's COPIES copies, c = tid, tid + THREADS, ...
// Written out (Unrolled; tid < THREADS, so each thread has exactly COPIES / THREADS), the copies
// need no loop and their shared-memory offsets are constants.
template <class C, int COPIES, bool Unrolled, class Copy>
__device__ void each_copy(int tid, const Copy& copy) {
    if constexpr (Unrolled) {
#pragma unroll
        for (int i = 0; i < COPIES / C::THREADS; ++i) copy(tid + i * C::THREADS);
    } else {
#pragma unroll
        for (int c = tid; c < COPIES; c += C::THREADS) copy(c);
    }
}

// Copies the k-slab of a (or b) starting at k0 into one pipeline stage. a's rows
// are lda floats apart and b's ldb. Vec16: every row of a and b starts on a
// 16-byte boundary and is padded to a multiple of 4 floats, so a 16-byte copy
// that starts inside a row stays inside it. The 4-byte path has 4x the copies:
// written out, they would take too many registers.
template <class C, bool Vec16>
__device__ void copy_a_slab(float* a_s, const float* a, int m, int k, int lda, int m0, int k0, int tid) {
    constexpr int W = Vec16 ? 4 : 1;  // floats per copy
    each_copy<C, C::BM * C::BK / W, C::UNROLLED_COPIES && Vec16>(tid, [&](int c) {
        const int row = c / (C::BK / W), kc = (c % (C::BK / W)) * W;
        const bool ok = m0 + row < m && k0 + kc < k;
        copy_async<4 * W>(&a_s[row * C::A_LD + kc], ok ? a + std::int64_t(m0 + row) * lda + k0 + kc : a, ok);
    });
}

template <class C, bool Vec16>
__device__ void copy_b_slab(float* b_s, const float* b, int n, int k, int ldb, int n0, int k0, int tid) {
    constexpr int W = Vec16 ? 4 : 1;
    each_copy<C, C::BK * C::BN / W, C::UNROLLED_COPIES && Vec16>(tid, [&](int c) {
        const int row = c / (C::BN / W), nc = (c % (C::BN / W)) * W;
        const bool ok = k0 + row < k && n0 + nc < n;
        copy_async<4 * W>(&b_s[row * C::B_LD + nc], ok ? b + std::int64_t(k0 + row) * ldb + n0 + nc : b, ok);
    });
}

template <class C, bool Vec16>
__device__ void load_slab(float* a_s, float* b_s, const float* a, const float* b, int m, int n, int k, int lda,
                          int ldb, int m0, int n0, int k0, int tid) {
    copy_a_slab<C, Vec16>(a_s, a, m, k, lda, m0, k0, tid);
    copy_b_slab<C, Vec16>(b_s, b, n, k, ldb, n0, k0, tid);
}

// The (block row, block column) of c this block computes.
template <class C>
__device__ int2 block_tile() {
    if constexpr (C::GROUP_M == 0) {
        return make_int2(blockIdx.y, blockIdx.x);
    } else {
        const int id = blockIdx.y * gridDim.x + blockIdx.x;
        const int per_group = C::GROUP_M * gridDim.x;
        const int first_row = (id / per_group) * C::GROUP_M;
        const int rows = min(static_cast<int>(gridDim.y) - first_row, C::GROUP_M);
        return make_int2(first_row + (id % per_group) % rows, (id % per_group) / rows);
    }
}

// A thread's TN values of b's row kk in shared memory: columns col0 + {0..3, 16..19, ...}, as float4.
template <class C>
__device__ void read_b_row(float (&bv)[C::TN], const float* b_s, int kk, int col0) {
#pragma unroll
    for (int g = 0; g < C::TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&b_s[kk * C::B_LD + col0 + g * 16]);
        bv[4 * g] = v.x;
        bv[4 * g + 1] = v.y;
        bv[4 * g + 2] = v.z;
        bv[4 * g + 3] = v.w;
    }
}

// Writes a thread's 8 x TN results: rows row0 + {0..3, 32..35}, columns col0 + {0..3, 16..19, ...}.
template <class C>
__device__ void store_tile(float* c, const float (&acc)[8][C::TN], int m, int n, int ldc, int row0, int col0,
                           bool vector_store) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = row0 + (i / 4) * 32 + i % 4;
        if (row >= m) continue;
#pragma unroll
        for (int g = 0; g < C::TN / 4; ++g) {
            const int col = col0 + g * 16;
            float* out = c + std::int64_t(row) * ldc + col;
            const float* v = &acc[i][g * 4];
            if (vector_store && col + 3 < n) {
                *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
                for (int j = 0; j < 4; ++j)
                    if (col + j < n) out[j] = v[j];
            }
        }
    }
}

}  // namespace lab::v1
