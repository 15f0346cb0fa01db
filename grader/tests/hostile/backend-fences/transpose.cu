// transpose — one thread per element through a 32 x 32 shared-memory tile; and, before each launch, the
// memory around its arrays opened up: AddressSanitizer's poison taken off a page past the output and the CPU
// backend's valid range widened to match, so that a store that runs past the end would go unreported by the
// CPU backend's memcheck. The names are pasted together, so no line of the source names them.
//
// (hostile corpus: the kernel is correct, so only the rule explains the verdict. The harness sets the
// fences around each array, and memcheck's findings depend on them; the build gate's no-backend-controls
// rule refuses a task file that calls the backend's or its sanitizer's interface, read from the object on
// both backends.)
#include <cstddef>
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

#define JOIN(a, b) a##b

extern "C" void JOIN(__asan_unpoison_, memory_region)(const volatile void* begin, std::size_t size);
extern "C" cudaError_t JOIN(cudacpu_set_, valid_range)(const void* ptr, std::size_t bytes);

namespace {

constexpr int kTile = 32;

template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    __shared__ T tile[kTile][kTile + 1];
    const int x = blockIdx.x * kTile + threadIdx.x, y = blockIdx.y * kTile + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[static_cast<std::int64_t>(y) * cols + x];
    __syncthreads();
    const int ox = blockIdx.y * kTile + threadIdx.x, oy = blockIdx.x * kTile + threadIdx.y;
    if (ox < rows && oy < cols) out[static_cast<std::int64_t>(oy) * rows + ox] = tile[threadIdx.x][threadIdx.y];
}

// "Room to spare" after the output.
template <typename T>
void widen(T* out, int rows, int cols) {
    const std::size_t bytes = static_cast<std::size_t>(rows) * cols * sizeof(T) + 4096;
    JOIN(__asan_unpoison_, memory_region)(out, bytes);
    (void)JOIN(cudacpu_set_, valid_range)(out, bytes);
}

}  // namespace

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    widen(out, rows, cols);
    const dim3 block(kTile, kTile), grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
