// transpose — reference solution: the classic shared-memory tile.
//
// A block moves a tile: it reads the tile row by row (coalesced), and after
// __syncthreads() writes it column by column of the tile, which are rows of
// `out` (coalesced again). The extra column of padding puts a tile column's
// elements in different shared-memory banks.
//
// Two versions of the same idea:
//   transpose_vector  64 x 64 tiles, 16 bytes (4 elements) per global access:
//                     a quarter of the memory instructions. It needs rows and
//                     columns that are multiples of 4 and 16-byte aligned
//                     pointers, so that every 4-element chunk is whole and aligned.
//   transpose_scalar  32 x 32 tiles, one element per access; any shape and alignment.
// The tile sizes, thread counts and block orders tried are in solution/lab/transpose/
// (docs/gpu-runs/2026-11-21-h200-kernels.md has their numbers).
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// Threads are 32 x Rows; each moves Tile / Rows elements.
template <typename T, int Tile, int Rows>
__global__ void transpose_scalar(const T* in, T* out, int rows, int cols) {
    static_assert(Tile == 32, "one warp spans a tile row");
    __shared__ T tile[Tile][Tile + 1];
    const int row0 = blockIdx.y * Tile, col0 = blockIdx.x * Tile;  // the tile's first row and column in `in`
    const int x = threadIdx.x;
    for (int y = threadIdx.y; y < Tile; y += Rows)
        if (row0 + y < rows && col0 + x < cols) tile[y][x] = in[std::int64_t(row0 + y) * cols + col0 + x];
    __syncthreads();
    // Row y of the tile's transpose is row col0 + y of out, from column row0 on.
    for (int y = threadIdx.y; y < Tile; y += Rows)
        if (col0 + y < cols && row0 + x < rows) out[std::int64_t(col0 + y) * rows + row0 + x] = tile[x][y];
}

template <typename T>
struct alignas(16) Chunk {
    T e[4];
};

// Threads are (Tile / 4) x Rows; thread x moves the chunk of elements 4x..4x+3
// of a row, Tile / Rows chunks in all.
template <typename T, int Tile, int Rows>
__global__ void __launch_bounds__(Tile / 4 * Rows)
    transpose_vector(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
    static_assert(sizeof(Chunk<T>) == 16, "four elements make one 16-byte access");
    __shared__ T tile[Tile][Tile + 1];
    const int row0 = blockIdx.y * Tile, col0 = blockIdx.x * Tile;
    const int x = 4 * threadIdx.x;
#pragma unroll
    for (int y = threadIdx.y; y < Tile; y += Rows) {
        if (row0 + y < rows && col0 + x < cols) {
            const Chunk<T> v = *reinterpret_cast<const Chunk<T>*>(&in[std::int64_t(row0 + y) * cols + col0 + x]);
#pragma unroll
            for (int i = 0; i < 4; ++i) tile[y][x + i] = v.e[i];
        }
    }
    __syncthreads();
#pragma unroll
    for (int y = threadIdx.y; y < Tile; y += Rows) {
        if (col0 + y < cols && row0 + x < rows) {
            Chunk<T> v;
#pragma unroll
            for (int i = 0; i < 4; ++i) v.e[i] = tile[x + i][y];
            *reinterpret_cast<Chunk<T>*>(&out[std::int64_t(col0 + y) * rows + row0 + x]) = v;
        }
    }
}

template <typename T>
bool aligned16(const T* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    if (rows % 4 == 0 && cols % 4 == 0 && aligned16(in) && aligned16(out)) {
        constexpr int tile = 64, pass_rows = 16;
        const dim3 block(tile / 4, pass_rows), grid((cols + tile - 1) / tile, (rows + tile - 1) / tile);
        transpose_vector<T, tile, pass_rows><<<grid, block>>>(out, in, rows, cols);
    } else {
        constexpr int tile = 32, pass_rows = 8;
        const dim3 block(32, pass_rows), grid((cols + tile - 1) / tile, (rows + tile - 1) / tile);
        transpose_scalar<T, tile, pass_rows><<<grid, block>>>(in, out, rows, cols);
    }
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
