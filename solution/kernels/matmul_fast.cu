// matmul_fast — reference solution: a register-blocked, warp-tiled FP32 GEMM
// fed by a two-stage pipeline, with its tile size and a split of k chosen per
// shape so that every shape keeps all the SMs busy. Plain FP32 FFMA: no tensor cores.
//
// One kernel, matmul_fast_kernel<Tiles, Split>, compiled for three tile sizes,
// each whole (Split false: one block per tile) and in pieces of k (Split true):
//   block   BM x BN tile of c, WARPS_M x WARPS_N warps, k-slabs of BK = 16
//   warp    64 x (4 * TN) tile of c, its 32 lanes arranged 8 (rows) x 4 (cols)
//   thread  8 x TN elements of c: rows {0..3, 32..35} + 4 * lane_row and
//           columns {0..3, 16..19, ...} + 4 * lane_col of its warp tile.
//           Splitting each thread's rows and columns into groups of four
//           makes a quarter-warp's 16-byte shared-memory reads hit different
//           banks or the same address.
//
// Data flow per k-slab of BK
//   a: global -> registers (float4, 4 k-steps of one row), loaded for the next
//      slab while this one is computed, then stored transposed into shared
//      memory (a_t[k][row]), so that a thread reads its 8 rows of one k-step
//      as two float4: a's fragment takes 8 registers;
//   b: global -> shared by cp.async, 16 bytes a copy, zero-filled past the edges;
//   shared -> registers, per k-step: a thread's 8 values of a and its TN values of b;
//   math: 8 * TN FFMA per k-step per thread (128 for six 16-byte shared loads at TN = 16).
//
// Which tiles, and in how many pieces k is cut (kClasses and plan(), at the end):
// a grid of B blocks on an H100's 132 SMs, each holding P blocks at once, runs in
// ceil(B / (132 P)) waves, and a last wave that is part full leaves SMs idle.
// 1024^3 in 128 x 256 tiles is 32 blocks: one wave, a quarter full.
//   class    tile        threads  per SM  why it exists
//   large    128 x 256   256      1       fewest loads per FFMA: the fastest SM; big products
//   wide     128 x 192   256      1       the same SM work in 3/4 of the tile, for shapes whose
//                                          large tiles end in a part-full wave (1536^3)
//   medium   128 x 128   256      2       8 x 8 per thread: twice the blocks of large, for
//                                          products too small to fill the SMs with large tiles (512^3)
// and k is cut into pieces when the tiles alone are too few blocks
// (1024 x 1024 x 8192: 32 large tiles x 4 pieces = 128 blocks). Piece 0 writes c;
// pieces 1.. write partial tiles to a workspace, and sum_parts adds them to c in
// a fixed order: no atomics, so c is the same, bit for bit, on every run.
// plan() picks the class and the pieces with the shortest predicted time: the
// busiest SM's blocks times a block's work at its class's measured speed, plus
// the partial tiles' trips through memory. On an H100 this measured 91.8-107% of
// cuBLAS FP32 at every shape tried from 1000^3 to 8192^3 (but 1025^3 and
// 1000 x 999 x 1001, 60%: padded copies and thin edges cost most there) and 94%
// at 512^3 (docs/gpu-runs/2026-11-23-h100-matmul-fast-shapes.md).
//
// Edges: rows of a or b that do not start on a 16-byte boundary (k or n not a
// multiple of 4) are first copied into padded rows. Edges thinner than kThinEdge
// beyond the last whole tile (4097 = 32 * 128 + 1) would cost a whole extra wave
// of tiles; a warp-per-element kernel does them. The experiments behind these
// choices (the row-major kernel, every configuration tried) are in solution/lab/.
#include <algorithm>
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// Whether every pointer is 16-byte aligned (cudaMalloc gives 256). Each kernel file
// stands alone, as a submission must: the grader takes task files only.
template <typename... P>
bool aligned16(const P*... p) {
    return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}

template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int TN_, int MIN_BLOCKS_, int BK_ = 16>
struct Tiles {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, TN = TN_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;  // blocks per SM the registers must leave room for
    // Blocks run in groups of GROUP_M block rows, column by column, so the
    // blocks resident at one time share rows of a and columns of b in L2.
    static constexpr int GROUP_M = 16;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int A_STAGE = BK * BM;                 // a_t[BK][BM]: a's slab, k-major
    static constexpr int B_STAGE = BK * BN;                 // b[BK][BN]
    static constexpr int A_LOADS = BM * BK / 4 / THREADS;   // float4 of a a thread stages per slab
    static constexpr int B_COPIES = BK * BN / 4 / THREADS;  // 16-byte copies of b a thread issues per slab
    static constexpr std::size_t SMEM_BYTES = 2 * std::size_t(A_STAGE + B_STAGE) * sizeof(float);  // two of each

    static_assert(BM == 64 * WARPS_M, "a warp covers 64 rows: 8 lane rows x 8 rows per thread");
    static_assert(BN == 4 * TN * WARPS_N, "a warp covers 4 lane columns x TN columns per thread");
    static_assert(TN % 4 == 0, "each thread's columns come in groups of four");
    static_assert(BK % 4 == 0, "a's slab is loaded four k-steps of a row at a time");
    static_assert(BM * BK % (4 * THREADS) == 0 && BK * BN % (4 * THREADS) == 0,
                  "every thread loads the same number of 16-byte chunks of each slab");
    static_assert(BM % 32 == 0, "consecutive threads store consecutive rows of a_t: conflict-free");
    static_assert(SMEM_BYTES <= 227 * 1024, "Hopper gives a block at most 227 KB of shared memory");
};

// The product the kernels compute: c = a b, a (m x k), b (k x n), c (m x n), with
// rows lda, ldb and ldc floats apart.
struct Gemm {
    const float* a;
    const float* b;
    float* c;
    int m, n, k, lda, ldb, ldc;
};

// k cut into `parts` pieces of k_per_part (a multiple of BK; the last may be shorter).
// The block of piece z > 0 writes its tile to partials + (z - 1) * part_stride, laid out like c.
struct KSplit {
    int parts = 1;
    int k_per_part = 0;
    float* partials = nullptr;
    std::int64_t part_stride = 0;
};

// Copies 16 bytes from global to shared memory, asynchronously on sm_80 and
// newer. `valid` false zero-fills the destination instead (the source is then not read).
__device__ void copy16_async(float* smem, const float* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0));
#else
    *reinterpret_cast<float4*>(smem) = valid ? *reinterpret_cast<const float4*>(gmem) : make_float4(0, 0, 0, 0);
#endif
}

__device__ void copy_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until every copy this thread committed has landed.
__device__ void copy_wait_all() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

// Every row of a and b starts on a 16-byte boundary and is padded to a
// multiple of 4 floats (matmul_fast pads them when they are not), so a 16-byte
// load or copy that starts inside a row stays inside it. k is where the block's
// piece of k ends: past it, and past the matrix's edge, the slabs hold zeros.

// b's slab [k0, k0 + BK) x [n0, n0 + BN) into shared memory by cp.async.
template <class C>
__device__ void copy_b_slab(float* b_s, const float* b, int n, int k, int ldb, int n0, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < C::B_COPIES; ++i) {
        const int c = tid + i * C::THREADS;
        const int row = c / (C::BN / 4), nc = (c % (C::BN / 4)) * 4;
        const bool ok = k0 + row < k && n0 + nc < n;
        copy16_async(&b_s[row * C::BN + nc], ok ? b + std::int64_t(k0 + row) * ldb + n0 + nc : b, ok);
    }
}

// a's slab [k0, k0 + BK) x [m0, m0 + BM) into registers, 4 k-steps of one row per float4.
// Consecutive threads take consecutive rows, so the transposed stores below are conflict-free.
template <class C>
__device__ void stage_a_slab(float4 (&staged)[C::A_LOADS], const float* a, int m, int k, int lda, int m0, int k0,
                             int tid) {
#pragma unroll
    for (int i = 0; i < C::A_LOADS; ++i) {
        const int chunk = tid + i * C::THREADS, row = chunk % C::BM, kc = chunk / C::BM * 4;
        const bool row_ok = m0 + row < m;
        const float* src = a + std::int64_t(row_ok ? m0 + row : 0) * lda + k0 + kc;
        staged[i] = row_ok && k0 + kc < k ? *reinterpret_cast<const float4*>(src) : make_float4(0, 0, 0, 0);
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

// The (block row, block column) of c this block computes.
template <class C>
__device__ int2 block_tile() {
    const int id = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = C::GROUP_M * gridDim.x;
    const int first_row = (id / per_group) * C::GROUP_M;
    const int rows = min(static_cast<int>(gridDim.y) - first_row, C::GROUP_M);
    return make_int2(first_row + (id % per_group) % rows, (id % per_group) / rows);
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

// Block (x, y) computes tile block_tile() of c. Split: block (x, y, z) only
// piece z of k, and pieces z > 0 write to the partials instead of c.
// Without Split the kernel is exactly the unsplit one, register for register:
// the piece's bounds, live through the loop, cost 8% of its speed (the H100 run
// of 2026-11-23), so the big products, which need no pieces, do not carry them.
template <class C, bool Split>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS)
    matmul_fast_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n,
                       int k, int lda, int ldb, int ldc, bool vector_store, const KSplit split) {
    constexpr int TN = C::TN;
    extern __shared__ __align__(16) float smem[];
    float* a_tiles = smem;                   // 2 x a_t[BK][BM]
    float* b_tiles = smem + 2 * C::A_STAGE;  // 2 x b[BK][BN]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int2 tile = block_tile<C>();
    const int m0 = tile.x * C::BM, n0 = tile.y * C::BN;
    // Shared-memory offsets of this thread's first row of a and first column of b.
    const int a_row0 = (warp / C::WARPS_N) * 64 + (lane / 4) * 4;
    const int b_col0 = (warp % C::WARPS_N) * 4 * TN + (lane % 4) * 4;
    // This block's piece of k: [k_begin, k_end).
    const int k_begin = Split ? blockIdx.z * split.k_per_part : 0;
    const int k_end = Split ? min(k, k_begin + split.k_per_part) : k;

    float acc[8][TN] = {};
    const int slabs = (k_end - k_begin + C::BK - 1) / C::BK;
    float4 staged[C::A_LOADS];

    stage_a_slab<C>(staged, a, m, k_end, lda, m0, k_begin, tid);
    store_a_slab<C>(a_tiles, staged, tid);
    copy_b_slab<C>(b_tiles, b, n, k_end, ldb, n0, k_begin, tid);
    copy_commit();
    copy_wait_all();
    __syncthreads();

    for (int t = 0; t < slabs; ++t) {
        const int next = (t + 1) % 2;
        const bool more = t + 1 < slabs;
        if (more) {  // slab t + 1 starts on its way: a into registers, b into the buffer slab t - 1 left
            stage_a_slab<C>(staged, a, m, k_end, lda, m0, k_begin + (t + 1) * C::BK, tid);
            copy_b_slab<C>(b_tiles + next * C::B_STAGE, b, n, k_end, ldb, n0, k_begin + (t + 1) * C::BK, tid);
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
#pragma unroll
            for (int q = 0; q < TN / 4; ++q) {
                const float4 v = *reinterpret_cast<const float4*>(&b_s[kk * C::BN + b_col0 + q * 16]);
                bv[4 * q] = v.x;
                bv[4 * q + 1] = v.y;
                bv[4 * q + 2] = v.z;
                bv[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }

        if (more) store_a_slab<C>(a_tiles + next * C::A_STAGE, staged, tid);  // its buffer is slab t - 1's: free
        copy_wait_all();
        __syncthreads();  // slab t + 1 is in place, and everyone is done with slab t
    }
    float* out = Split && blockIdx.z > 0 ? split.partials + (blockIdx.z - 1) * split.part_stride : c;
    store_tile<C>(out, acc, m, n, ldc, m0 + a_row0, n0 + b_col0, vector_store);
}

// c += partials of pieces 1, 2, ... of k, added one piece after the other: the
// same additions in the same order on every run. W columns at a time: 4 (float4)
// when every row of c starts on a 16-byte boundary, else 1.
template <int W>
__global__ void sum_parts(float* __restrict__ c, int rows, int cols, int ldc, const float* __restrict__ partials,
                          std::int64_t part_stride, int parts) {
    const int groups = cols / W;
    const std::int64_t total = std::int64_t(rows) * groups;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t at = (i / groups) * ldc + (i % groups) * W;
        float sum[W];
        if constexpr (W == 4) {
            const float4 v = *reinterpret_cast<const float4*>(c + at);
            sum[0] = v.x, sum[1] = v.y, sum[2] = v.z, sum[3] = v.w;
        } else {
            sum[0] = c[at];
        }
        for (int p = 0; p + 1 < parts; ++p) {
            const float* part = partials + p * part_stride + at;
            if constexpr (W == 4) {
                const float4 v = *reinterpret_cast<const float4*>(part);
                sum[0] += v.x, sum[1] += v.y, sum[2] += v.z, sum[3] += v.w;
            } else {
                sum[0] += part[0];
            }
        }
        if constexpr (W == 4)
            *reinterpret_cast<float4*>(c + at) = make_float4(sum[0], sum[1], sum[2], sum[3]);
        else
            c[at] = sum[0];
    }
}

// Copies a rows x cols matrix into rows of `ld` floats (ld >= cols, a multiple
// of 4), zero-filling the padding, so that every row starts on a 16-byte
// boundary. Blocks take rows (y) and 4-float groups of a row (x): no division
// per element, 16-byte stores.
__global__ void pad_rows(const float* __restrict__ src, int rows, int cols, float* __restrict__ dst, int ld) {
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const float* in = src + std::int64_t(r) * cols;
        float4* out = reinterpret_cast<float4*>(dst + std::int64_t(r) * ld);
        for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < ld / 4; q += gridDim.x * blockDim.x) {
            const int col = 4 * q;
            out[q] = make_float4(col < cols ? in[col] : 0.0f, col + 1 < cols ? in[col + 1] : 0.0f,
                                 col + 2 < cols ? in[col + 2] : 0.0f, col + 3 < cols ? in[col + 3] : 0.0f);
        }
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

int blocks_for(std::int64_t threads) { return static_cast<int>(std::min<std::int64_t>((threads + 255) / 256, 4096)); }

int ceil_div(std::int64_t x, std::int64_t y) { return static_cast<int>((x + y - 1) / y); }

// How many blocks of class C one SM holds at once (registers, shared memory,
// threads). The first call also raises the kernels' shared-memory limit, which
// must be asked for once per kernel above 48 KB.
template <class C>
int resident_blocks() {
    static const int blocks = [] {
        for (auto kernel : {matmul_fast_kernel<C, false>, matmul_fast_kernel<C, true>})
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(C::SMEM_BYTES)));
        int n = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matmul_fast_kernel<C, false>, C::THREADS,
                                                                 C::SMEM_BYTES));
        return std::max(n, 1);
    }();
    return blocks;
}

// Launches the tile grid of class C over g: one block per tile and piece of k.
template <class C>
void run_tiles(const Gemm& g, const KSplit& split) {
    resident_blocks<C>();
    const auto kernel = split.parts > 1 ? matmul_fast_kernel<C, true> : matmul_fast_kernel<C, false>;
    const dim3 grid(ceil_div(g.n, C::BN), ceil_div(g.m, C::BM), split.parts);
    const bool vector_store = g.ldc % 4 == 0 && aligned16(g.c) && split.part_stride % 4 == 0;
    kernel<<<grid, C::THREADS, C::SMEM_BYTES>>>(g.a, g.b, g.c, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, vector_store, split);
    CUDA_CHECK_LAUNCH();
}

struct TileClass {
    const char* name;
    int bm, bn;
    double speed;  // FFMAs per cycle of a full SM, relative to large (measured, see the header)
    void (*run)(const Gemm&, const KSplit&);
    int (*per_sm)();
};

template <class C>
constexpr TileClass tile_class(const char* name, double speed) {
    return {name, C::BM, C::BN, speed, run_tiles<C>, resident_blocks<C>};
}

//                                       BM   BN  warps   TN  blocks/SM
using Large = Tiles<128, 256, 2, 4, 16, 1>;
using Wide = Tiles<128, 192, 2, 4, 12, 1>;
using Medium = Tiles<128, 128, 2, 4, 8, 2>;

// The dispatch table. Why each class exists is in the header.
const TileClass kClasses[] = {
    tile_class<Large>("large", 1.00),
    tile_class<Wide>("wide", 0.88),
    tile_class<Medium>("medium", 0.86),
};

// The rows (or columns) of c a grid of `tile`-sized tiles computes: all of them,
// or all but an edge thinner than kThinEdge beyond the last whole tile, which
// edge_elements computes instead of a whole extra row of blocks.
constexpr int kThinEdge = 8;
int tiled(int extent, int tile) { return extent % tile <= kThinEdge && extent > tile ? extent - extent % tile : extent; }

// How the work is cut: a class, and k in `parts` pieces of k_per_part.
struct Plan {
    const TileClass* tiles;
    int parts, k_per_part;
};

// A plan's predicted time, in FFMAs of one SM: the busiest SM runs
// ceil(blocks / SMs) blocks, per_sm of them at a time, each BM x BN x its k
// (plus a fixed start-up cost) at the class's speed; split products run the
// split kernel, a little slower, and also move their partial tiles through
// memory and launch the sum.
constexpr double kBlockStart = 3.0e5;   // a block's start and end (first loads, last stores), in FFMAs
constexpr double kSplitSpeed = 0.95;    // the split kernel's speed against the unsplit one's
constexpr double kFfmaPerByte = 0.06;   // one SM's FFMAs in the time the GPU moves a byte (~180 G/s / 3 TB/s)
constexpr double kSumLaunch = 4.0e5;    // launching sum_parts and its first loads
constexpr int kMaxParts = 16;

double predicted(const TileClass& t, int m, int n, int k, int parts, int k_per_part, int sms) {
    const std::int64_t blocks = std::int64_t(ceil_div(tiled(m, t.bm), t.bm)) * ceil_div(tiled(n, t.bn), t.bn) * parts;
    const int busiest = ceil_div(blocks, sms), at_once = std::min(busiest, t.per_sm());
    const double speed = t.speed * (parts > 1 ? kSplitSpeed : 1.0);
    const double block = double(t.bm) * t.bn * std::min(k, k_per_part) / speed + kBlockStart;
    double time = double(ceil_div(busiest, at_once)) * at_once * block;
    if (parts > 1) time += kSumLaunch + kFfmaPerByte * 4.0 * m * n * (2.0 * (parts - 1) + 2.0);
    return time;
}

Plan plan(int m, int n, int k, int sms) {
    Plan best{&kClasses[0], 1, k};
    double best_time = predicted(kClasses[0], m, n, k, 1, k, sms);
    for (const TileClass& t : kClasses)
        for (int parts = 1; parts <= kMaxParts; ++parts) {
            const int k_per_part = ceil_div(ceil_div(k, parts), 16) * 16;  // a multiple of BK
            if (ceil_div(k, k_per_part) != parts) continue;                // no empty pieces
            const double time = predicted(t, m, n, k, parts, k_per_part, sms);
            if (time < best_time) best = {&t, parts, k_per_part}, best_time = time;
        }
    return best;
}

int sm_count() {
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

// Device memory the launcher keeps between calls and grows when a call needs
// more (a cudaMalloc per call would cost more than most products): b with
// padded rows, and the partial tiles of a split k.
float* scratch(std::size_t floats) {
    static float* buffer = nullptr;
    static std::size_t capacity = 0;
    if (floats > capacity) {
        if (buffer) CUDA_CHECK(cudaFree(buffer));
        buffer = nullptr;
        CUDA_CHECK(cudaMalloc(&buffer, floats * sizeof(float)));
        capacity = floats;
    }
    return buffer;
}

std::int64_t round_up4(std::int64_t x) { return (x + 3) / 4 * 4; }

// A copy of the rows x cols matrix src with rows of round_up4(cols) floats, in dst.
const float* padded(const float* src, int rows, int cols, float* dst) {
    const int ld = static_cast<int>(round_up4(cols));
    const dim3 grid(std::min(ceil_div(ld / 4, 256), 64), std::min(rows, 4096));
    pad_rows<<<grid, 256>>>(src, rows, cols, dst, ld);
    CUDA_CHECK_LAUNCH();
    return dst;
}

// Runs `p` for c = a b: pads rows of a and b that do not start on 16-byte
// boundaries, launches the tile grid, adds the partial tiles, and computes the
// thin edges the grid leaves out.
void run_plan(const Plan& p, const float* a, const float* b, float* c, int m, int n, int k) {
    const TileClass& t = *p.tiles;
    // g.m x g.n: the part of c the tile grid computes
    Gemm g{a, b, c, tiled(m, t.bm), tiled(n, t.bn), k, k, n, n};

    const bool pad_a = k % 4 != 0 || !aligned16(a), pad_b = n % 4 != 0 || !aligned16(b);
    const std::int64_t a_floats = pad_a ? m * round_up4(k) : 0, b_floats = pad_b ? k * round_up4(n) : 0;
    const std::int64_t part_stride = round_up4(std::int64_t(g.m) * n);  // a partial tile is laid out like c
    float* buffer = scratch(a_floats + b_floats + (p.parts - 1) * part_stride);  // every piece 16-byte aligned
    if (pad_a) g.a = padded(a, m, k, buffer), g.lda = static_cast<int>(round_up4(k));
    if (pad_b) g.b = padded(b, k, n, buffer + a_floats), g.ldb = static_cast<int>(round_up4(n));
    const KSplit split{p.parts, p.k_per_part, buffer + a_floats + b_floats, part_stride};
    t.run(g, split);
    if (p.parts > 1) {
        const bool vec = g.n % 4 == 0 && n % 4 == 0 && aligned16(c);
        const std::int64_t groups = std::int64_t(g.m) * (vec ? g.n / 4 : g.n);
        if (vec)
            sum_parts<4><<<blocks_for(groups), 256>>>(c, g.m, g.n, n, split.partials, part_stride, p.parts);
        else
            sum_parts<1><<<blocks_for(groups), 256>>>(c, g.m, g.n, n, split.partials, part_stride, p.parts);
        CUDA_CHECK_LAUNCH();
    }
    if (g.m < m || g.n < n) {
        const std::int64_t edge = std::int64_t(m - g.m) * n + std::int64_t(g.m) * (n - g.n);
        edge_elements<<<blocks_for(32 * edge), 256>>>(a, b, c, m, n, k, g.m, g.n);
        CUDA_CHECK_LAUNCH();
    }
}

}  // namespace

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    run_plan(plan(m, n, k, sm_count()), a, b, c, m, n, k);
}
