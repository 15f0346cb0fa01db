// fill: one thread per element; and, only where the compiler reads the file for the GPU (__CUDA_ARCH__ is
// defined in nvcc's device pass, not in its host pass), an #include of a file of the grading machine by its
// path, whose text the device pass's error messages would quote. A check that preprocesses the file once, as
// the host compiler sees it, never meets the #include.
//
// (hostile corpus: what the file includes is listed from both views of the file, the device pass's and the
// host pass's (starter/tools/includes.py), before anything is compiled: refused by the build gate's includes
// rule; and a build log quotes only the student's own lines (grader/backends/compiler_log.py).)
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

#ifdef __CUDA_ARCH__
#include "/etc/ld.so.conf"
#endif

namespace {

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) out[static_cast<std::int64_t>(r) * cols + c] = r * cols + c;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
