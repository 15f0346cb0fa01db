// matmul_fast lab, version 1: every configuration tried on Hopper (VariantConfig<n>, the
// sweep's candidate v<n>) and version 1's launcher, which runs one of them on every shape.
// Frozen: the code behind the numbers of docs/gpu-runs/2026-11-21-h200*.md and
// 2026-11-21-h100-matmul-fast.md, as solution/kernels/matmul_fast.cu held it before the
// shape dispatch (commit 754543d). Kept as it was so that those numbers can be reproduced;
// the shipped kernel's descendants of these helpers live in solution/kernels/matmul_fast.cu.
#pragma once

#include "v1_kmajor.cuh"
#include "v1_rowmajor.cuh"

namespace lab::v1 {

// The configurations compared on Hopper (docs/gpu-runs/ has every number):
// 0-18 on an H200, where 17 was fastest (80% of cuBLAS at 4096^3); 19-36 on an
// H100 (2026-11-21-h100-matmul-fast.md), where 31 was fastest (92.6%) and is
// version 1's default. solution/lab/README.md says how to time any of them
// (each is the sweep's candidate v<n>).
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

// Large products run on the tile grid; what is left around it goes elsewhere:
//  - rows whose length is not a multiple of 4 floats (k or n odd, say) cannot
//    be loaded 16 bytes at a time, so a and b are first copied into padded rows
//    (a few percent of the product's time, measured in docs/gpu-runs/);
//  - edges thinner than kThinEdge beyond the last whole tile (4097 = 32 * 128 + 1)
//    would cost a whole extra wave of tiles; a warp-per-element kernel does them.
// Small products take the simple 4-byte path for everything.
template <class Chosen>
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

// Version 1 with configuration V.
template <int V>
void matmul_fast_variant(const float* a, const float* b, float* c, int m, int n, int k) {
    matmul_fast<typename VariantConfig<V>::type>(a, b, c, m, n, k);
}

}  // namespace lab::v1
