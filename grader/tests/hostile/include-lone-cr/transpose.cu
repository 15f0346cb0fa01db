// transpose that includes a file behind a comment: the comment line ends with a lone carriage return,
// which GCC takes as a line end, so the #include after it is not in the comment.
#include "cuda_check.h"
#include "tasks.h"
// the next line is part of this comment, for a reader that only knows \n#include "/etc/passwd"
template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<long>(c) * rows + r] = in[static_cast<long>(r) * cols + c];
}

template <typename T>
void transpose(const T* in, T* out, int rows, int cols) {
    transpose_kernel<<<dim3((cols + 31) / 32, (rows + 7) / 8), dim3(32, 8)>>>(in, out, rows, cols);
    CUDA_CHECK_LAUNCH();
}

TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
