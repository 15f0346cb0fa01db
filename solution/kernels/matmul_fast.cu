// matmul_fast — reference solution: a register-blocked, warp-tiled FP32 GEMM
// fed by a two-stage pipeline. Plain FP32 FFMA: no tensor cores.
//
// Work split (the shapes are a Config, below; the default is 128 x 256 tiles
// of 8 warps of 64 x 64, k-slabs of BK = 16, blocks grouped 16 rows at a time)
//   block   BM x BN tile of c, WARPS_M x WARPS_N warps
//   warp    64 x (4 * TN) tile of c, its 32 lanes arranged 8 (rows) x 4 (cols)
//   thread  8 x TN elements of c: rows {0..3, 32..35} + 4 * lane_row and
//           columns {0..3, 16..19, ...} + 4 * lane_col of its warp tile.
//           Splitting each thread's rows and columns into groups of four
//           makes a quarter-warp's 16-byte shared-memory reads hit different
//           banks or the same address.
//
// Data flow per k-slab of BK (the default kernel, matmul_fast_kmajor_kernel)
//   a: global -> registers (float4, 4 k-steps of one row), loaded for the next
//      slab while this one is computed, then stored transposed into shared
//      memory (a_t[k][row]);
//   b: global -> shared by cp.async, 16 bytes a copy, zero-filled past the edges;
//   shared -> registers, per k-step: a thread's 8 values of a as two float4 and
//      its TN values of b as TN / 4 float4;
//   math: 8 * TN FFMA per k-step per thread (128 for six 16-byte shared loads).
// Rows that do not start on a 16-byte boundary (k or n not a multiple of 4) are
// first copied into padded rows; small products take a 4-byte path.
// matmul_fast_kernel, the earlier design, keeps a's slab row-major and loads
// both matrices by cp.async; it is kept for the comparison in VariantConfig.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda_check.h"
#include "tasks.h"

namespace {

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

// The configurations compared on Hopper (docs/gpu-runs/ has every number):
// 0-18 on an H200, where 17 was fastest (80% of cuBLAS at 4096^3); 19-36 on an
// H100 (2026-11-21-h100-matmul-fast.md), where 31 was fastest (92.6%) and is
// the default. Another one builds with -DMATMUL_FAST_VARIANT=n
// (docs/gpu-runs/device_run.sh variants).
//                                        BM   BN  BK  warps   TN stages blocks group
template <int V> struct VariantConfig;
template <> struct VariantConfig<0> { using type = Config<128, 128, 16, 2, 4, 8,  4, 2>; };
template <> struct VariantConfig<1> { using type = Config<128, 128, 16, 2, 4, 8,  3, 2>; };
template <> struct VariantConfig<2> { using type = Config<128, 128, 16, 2, 2, 16, 3, 2>; };
template <> struct VariantConfig<3> { using type = Config<128, 128, 8,  2, 2, 16, 4, 2>; };
template <> struct VariantConfig<4> { using type = Config<128, 256, 16, 2, 4, 16, 3, 1>; };
template <> struct VariantConfig<5> { using type = Config<128, 256, 8,  2, 4, 16, 4, 1>; };
template <> struct VariantConfig<6> { using type = Config<128, 128, 16, 2, 2, 16, 4, 2>; };
template <> struct VariantConfig<7> { using type = Config<128, 128, 16, 2, 2, 16, 3, 2, 8>; };
template <> struct VariantConfig<8> { using type = Config<128, 256, 16, 2, 4, 16, 3, 1, 8>; };
template <> struct VariantConfig<9> { using type = Config<128, 128, 16, 2, 2, 16, 4, 2, 8>; };
template <> struct VariantConfig<10> { using type = Config<128, 128, 32, 2, 2, 16, 3, 2, 8>; };
template <> struct VariantConfig<11> { using type = Config<128, 128, 32, 2, 2, 16, 2, 2, 8>; };
template <> struct VariantConfig<12> { using type = Config<128, 256, 32, 2, 4, 16, 2, 1, 8>; };
template <> struct VariantConfig<13> { using type = Config<256, 128, 16, 4, 2, 16, 3, 1, 8>; };
template <> struct VariantConfig<14> { using type = Config<128, 256, 16, 2, 4, 16, 4, 1, 8>; };
template <> struct VariantConfig<15> { using type = Config<256, 128, 32, 4, 2, 16, 2, 1, 8>; };
template <> struct VariantConfig<16> { using type = Config<128, 256, 32, 2, 4, 16, 3, 1, 8>; };
template <> struct VariantConfig<17> { using type = Config<128, 256, 32, 2, 4, 16, 2, 1, 16>; };
template <> struct VariantConfig<18> { using type = Config<128, 256, 32, 2, 4, 16, 2, 1, 4>; };
// BK = 64 halves the barriers per FLOP again; unrolled copies take ~150 loop and
// address instructions out of every slab; a partly unrolled math loop keeps the
// hot code small. On the H100 19 gained at most 1.4 points over 17; the others lost up to 20.
//                                        BM   BN  BK  warps   TN stages blocks group unrolled kk_unroll
template <> struct VariantConfig<19> { using type = Config<128, 256, 64, 2, 4, 16, 2, 1, 16>; };
template <> struct VariantConfig<20> { using type = Config<128, 256, 32, 2, 4, 16, 2, 1, 16, true>; };
template <> struct VariantConfig<21> { using type = Config<128, 256, 64, 2, 4, 16, 2, 1, 16, true>; };
template <> struct VariantConfig<22> { using type = Config<128, 256, 32, 2, 4, 16, 2, 1, 16, true, 2>; };
template <> struct VariantConfig<23> { using type = Config<128, 256, 64, 2, 4, 16, 2, 1, 16, true, 2>; };
template <> struct VariantConfig<24> { using type = Config<256, 128, 64, 4, 2, 16, 2, 1, 16, true>; };
// k-major a (KMajorA, matmul_fast_kmajor_kernel): a's fragment in 8 registers, not 32,
// which leaves the registers to load the next k-step beside the math. 31 is the
// default; its neighbours (BK 8 or 32, looped copies, 256 x 128) lost 6-11 points
// at 4096^3, 35 (grouped by 8) tied it, and BK 64 spills.
template <> struct VariantConfig<30> { using type = KMajorA<Config<128, 256, 32, 2, 4, 16, 2, 1, 16, true>>; };
template <> struct VariantConfig<31> { using type = KMajorA<Config<128, 256, 16, 2, 4, 16, 2, 1, 16, true>>; };
template <> struct VariantConfig<32> { using type = KMajorA<Config<128, 256, 64, 2, 4, 16, 2, 1, 16, true>>; };
template <> struct VariantConfig<33> { using type = KMajorA<Config<128, 256, 16, 2, 4, 16, 2, 1, 16>>; };
template <> struct VariantConfig<34> { using type = KMajorA<Config<128, 256, 8, 2, 4, 16, 2, 1, 16, true>>; };
template <> struct VariantConfig<35> { using type = KMajorA<Config<128, 256, 16, 2, 4, 16, 2, 1, 8, true>>; };
template <> struct VariantConfig<36> { using type = KMajorA<Config<256, 128, 16, 4, 2, 16, 2, 1, 16, true>>; };
#ifndef MATMUL_FAST_VARIANT
#define MATMUL_FAST_VARIANT 31
#endif
using Chosen = VariantConfig<MATMUL_FAST_VARIANT>::type;

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

template <class C, bool Vec16>
void launch(const float* a, const float* b, float* c, int m, int n, int k, int lda, int ldb, int ldc) {
    // More than 48 KB of dynamic shared memory must be asked for once per kernel.
    constexpr auto kernel = [] {  // if constexpr: the other kernel is not instantiated for this C
        if constexpr (IsKMajorA<C>::value) return matmul_fast_kmajor_kernel<C, Vec16>;
        else return matmul_fast_kernel<C, Vec16>;
    }();
    static const bool configured = [] {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(C::SMEM_BYTES)));
        return true;
    }();
    (void)configured;
    const dim3 grid((n + C::BN - 1) / C::BN, (m + C::BM - 1) / C::BM);
    const bool vector_store = ldc % 4 == 0 && aligned16(c);
    kernel<<<grid, C::THREADS, C::SMEM_BYTES>>>(a, b, c, m, n, k, lda, ldb, ldc, vector_store);
    CUDA_CHECK_LAUNCH();
}

// Copies a rows x cols matrix into rows of `ld` floats (ld >= cols, a multiple
// of 4), zero-filling the padding, so that every row starts on a 16-byte boundary.
__global__ void pad_rows(const float* __restrict__ src, int rows, int cols, float* __restrict__ dst, int ld) {
    const std::int64_t total = std::int64_t(rows) * ld;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t r = i / ld;
        const int col = static_cast<int>(i - r * ld);
        dst[i] = col < cols ? src[r * cols + col] : 0.0f;
    }
}

// The thin edges of c that the tile grid leaves out: rows [row0, m) of every
// column, and columns [col0, n) of rows [0, row0). One warp per element, its
// lanes splitting k, then a shuffle reduction.
__global__ void edge_elements(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                              int n, int k, int row0, int col0) {
    const std::int64_t bottom = std::int64_t(m - row0) * n, total = bottom + std::int64_t(row0) * (n - col0);
    const int lane = threadIdx.x % 32;
    for (std::int64_t e = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32; e < total;
         e += std::int64_t(gridDim.x) * blockDim.x / 32) {
        const std::int64_t i = e < bottom ? row0 + e / n : (e - bottom) / (n - col0);
        const std::int64_t j = e < bottom ? e % n : col0 + (e - bottom) % (n - col0);
        // Eight partial sums, so that eight loads per lane are in flight at once.
        float part[8] = {};
        int kk = lane;
        for (; kk + 7 * 32 < k; kk += 8 * 32) {
#pragma unroll
            for (int u = 0; u < 8; ++u) part[u] = fmaf(a[i * k + kk + 32 * u], b[std::int64_t(kk + 32 * u) * n + j], part[u]);
        }
        for (; kk < k; kk += 32) part[0] = fmaf(a[i * k + kk], b[std::int64_t(kk) * n + j], part[0]);
        float sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) c[i * n + j] = sum;
    }
}

// Scratch memory for the padded copies, kept between calls (it only grows):
// a cudaMalloc per call would cost more than the copies.
float* scratch(std::size_t floats) {
    static float* buffer = nullptr;
    static std::size_t capacity = 0;
    if (floats > capacity) {
        if (buffer) CUDA_CHECK(cudaFree(buffer));
        CUDA_CHECK(cudaMalloc(&buffer, floats * sizeof(float)));
        capacity = floats;
    }
    return buffer;
}

int blocks_for(std::int64_t threads) { return static_cast<int>(std::min<std::int64_t>((threads + 255) / 256, 4096)); }

float* padded_copy(const float* src, int rows, int cols, int ld, float* dst) {
    pad_rows<<<blocks_for(std::int64_t(rows) * ld), 256>>>(src, rows, cols, dst, ld);
    CUDA_CHECK_LAUNCH();
    return dst;
}

int round_up4(int x) { return (x + 3) / 4 * 4; }

}  // namespace

// Large products run on the tile grid; what is left around it goes elsewhere:
//  - rows whose length is not a multiple of 4 floats (k or n odd, say) cannot
//    be loaded 16 bytes at a time, so a and b are first copied into padded rows
//    (a few percent of the product's time, measured in docs/gpu-runs/);
//  - edges thinner than kThinEdge beyond the last whole tile (4097 = 32 * 128 + 1)
//    would cost a whole extra wave of tiles; a warp-per-element kernel does them.
// Small products take the simple 4-byte path for everything.
void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    constexpr double kLarge = 1 << 27;  // m * n * k
    constexpr int kThinEdge = 8;
    if (double(m) * n * k < kLarge) {
        if (k % 4 == 0 && n % 4 == 0 && aligned16(a, b))
            launch<Chosen, true>(a, b, c, m, n, k, k, n, n);
        else
            launch<Chosen, false>(a, b, c, m, n, k, k, n, n);
        return;
    }
    int m_grid = m, n_grid = n;  // the part of c the tile grid computes
    if (m % Chosen::BM <= kThinEdge && n % Chosen::BN <= kThinEdge && m >= Chosen::BM && n >= Chosen::BN) {
        m_grid = m - m % Chosen::BM;
        n_grid = n - n % Chosen::BN;
    }
    const float* a_rows = a;
    const float* b_rows = b;
    int lda = k, ldb = n;
    if (k % 4 != 0 || n % 4 != 0 || !aligned16(a, b)) {
        lda = round_up4(k);
        ldb = round_up4(n);
        float* a_pad = scratch(std::size_t(m) * lda + std::size_t(k) * ldb);
        float* b_pad = a_pad + std::size_t(m) * lda;  // a multiple of 4 floats from a_pad: 16-byte aligned
        a_rows = padded_copy(a, m, k, lda, a_pad);
        b_rows = padded_copy(b, k, n, ldb, b_pad);
    }
    launch<Chosen, true>(a_rows, b_rows, c, m_grid, n_grid, k, lda, ldb, n);
    if (m_grid < m || n_grid < n) {
        const std::int64_t edge = std::int64_t(m - m_grid) * n + std::int64_t(m_grid) * (n - n_grid);
        edge_elements<<<blocks_for(32 * edge), 256>>>(a, b, c, m, n, k, m_grid, n_grid);
        CUDA_CHECK_LAUNCH();
    }
}
