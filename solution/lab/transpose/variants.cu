// transpose lab: the versions compared on an H200 (docs/gpu-runs/2026-11-21-h200-kernels.md
// has the numbers), each the sweep's candidate t<n>; t2 is what solution/kernels/transpose.cu
// ships. Frozen as solution/kernels/transpose.cu held them (commit 754543d), with one
// technique the shipped file left out: diagonal block order, which spreads the blocks
// running at one time over more rows of `out` (square grids only).
//   solution/lab/sweep.sh --task transpose --candidates t0,t1,t2,t3,t4,t5 --shape 8192x8192
#include <cstdint>
#include <string>

#include "../candidates.h"
#include "cuda_check.h"
#include "tasks.h"

namespace lab::transpose_v1 {

// The versions.                      vector  tile  rows  diagonal
constexpr int kVariants[][4] = {{0, 32, 8, 0}, {0, 32, 8, 1}, {1, 64, 16, 0}, {1, 64, 16, 1}, {1, 32, 32, 0},
                                {1, 64, 8, 0}};
constexpr int kCount = sizeof kVariants / sizeof kVariants[0];

// The tile this block moves, as (first row, first column) in `in`. Diagonal
// order (square grids only) spreads the blocks running at one time over more
// rows of `out`.
template <int Tile, bool Diagonal>
__device__ int2 tile_origin() {
    int bx = blockIdx.x;
    if (Diagonal && gridDim.x == gridDim.y) bx = (blockIdx.x + blockIdx.y) % gridDim.x;
    return make_int2(blockIdx.y * Tile, bx * Tile);
}

// Threads are 32 x Rows; each moves Tile / Rows elements.
template <typename T, int Tile, int Rows, bool Diagonal>
__global__ void transpose_scalar(const T* in, T* out, int rows, int cols) {
    static_assert(Tile == 32, "one warp spans a tile row");
    __shared__ T tile[Tile][Tile + 1];
    const int2 origin = tile_origin<Tile, Diagonal>();
    const int x = threadIdx.x;
    for (int y = threadIdx.y; y < Tile; y += Rows)
        if (origin.x + y < rows && origin.y + x < cols) tile[y][x] = in[std::int64_t(origin.x + y) * cols + origin.y + x];
    __syncthreads();
    // Row y of the tile's transpose is row origin.y + y of out, from column origin.x on.
    for (int y = threadIdx.y; y < Tile; y += Rows)
        if (origin.y + y < cols && origin.x + x < rows) out[std::int64_t(origin.y + y) * rows + origin.x + x] = tile[x][y];
}

template <typename T>
struct alignas(16) Chunk {
    T e[4];
};

// Threads are (Tile / 4) x Rows; thread x moves the chunk of elements 4x..4x+3
// of a row, Tile / Rows chunks in all.
template <typename T, int Tile, int Rows, bool Diagonal>
__global__ void __launch_bounds__(Tile / 4 * Rows)
    transpose_vector(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
    static_assert(sizeof(Chunk<T>) == 16, "four elements make one 16-byte access");
    __shared__ T tile[Tile][Tile + 1];
    const int2 origin = tile_origin<Tile, Diagonal>();
    const int x = 4 * threadIdx.x;
#pragma unroll
    for (int y = threadIdx.y; y < Tile; y += Rows) {
        if (origin.x + y < rows && origin.y + x < cols) {
            const Chunk<T> v = *reinterpret_cast<const Chunk<T>*>(&in[std::int64_t(origin.x + y) * cols + origin.y + x]);
#pragma unroll
            for (int i = 0; i < 4; ++i) tile[y][x + i] = v.e[i];
        }
    }
    __syncthreads();
#pragma unroll
    for (int y = threadIdx.y; y < Tile; y += Rows) {
        if (origin.y + y < cols && origin.x + x < rows) {
            Chunk<T> v;
#pragma unroll
            for (int i = 0; i < 4; ++i) v.e[i] = tile[x + i][y];
            *reinterpret_cast<Chunk<T>*>(&out[std::int64_t(origin.y + y) * rows + origin.x + x]) = v;
        }
    }
}

template <typename T>
bool aligned16(const T* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <int V, typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    constexpr bool kVector = kVariants[V][0];
    constexpr int kTile = kVariants[V][1], kRows = kVariants[V][2];
    constexpr bool kDiagonal = kVariants[V][3];
    if (kVector && rows % 4 == 0 && cols % 4 == 0 && aligned16(in) && aligned16(out)) {
        const dim3 block(kTile / 4, kRows), grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
        transpose_vector<T, kTile, kRows, kDiagonal><<<grid, block>>>(in, out, rows, cols);
    } else {
        constexpr int tile = 32, pass_rows = kVector ? 8 : kRows;
        const dim3 block(32, pass_rows), grid((cols + tile - 1) / tile, (rows + tile - 1) / tile);
        transpose_scalar<T, tile, pass_rows, !kVector && kDiagonal><<<grid, block>>>(in, out, rows, cols);
    }
    CUDA_CHECK_LAUNCH();
}

}  // namespace lab::transpose_v1

namespace {

template <int V>
lab::Candidate candidate() {
    using lab::transpose_v1::kVariants;
    const std::string what = std::string(kVariants[V][0] ? "16-byte" : "4-byte") + " accesses, " +
                             std::to_string(kVariants[V][1]) + " x " + std::to_string(kVariants[V][1]) + " tile, " +
                             std::to_string(kVariants[V][2]) + " rows of threads" +
                             (kVariants[V][3] ? ", diagonal block order" : "");
    return lab::transpose_candidate("t" + std::to_string(V), what, lab::transpose_v1::transpose<V, float>,
                                    lab::transpose_v1::transpose<V, std::int32_t>);
}

static_assert(lab::transpose_v1::kCount == 6, "one candidate per version below");
const bool registered_transpose =
    lab::add_candidates({candidate<0>(), candidate<1>(), candidate<2>(), candidate<3>(), candidate<4>(), candidate<5>()});

}  // namespace
