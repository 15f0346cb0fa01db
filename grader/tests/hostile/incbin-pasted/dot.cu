// dot that pulls a file in at compile time with .incbin, the directive built by the preprocessor from
// pasted tokens, which no pattern over the source can see: what holds is that the build's sandbox
// shows it nothing but the toolchain, the harness's headers and the submission (the file is not there,
// so the file does not assemble and only its own task fails).
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "tasks.h"

#define PASTE(a, b) a##b
#define TEXT(x) #x
#define STRING(x) TEXT(x)
asm(".section .rodata\n.globl stolen_dot\nstolen_dot:\n" STRING(PASTE(.inc, bin)) " \"/etc/passwd\"\n.byte 0\n.previous");
extern "C" const char stolen_dot[];

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += x[i] * y[i];
    atomicAdd(result, sum);
}

void dot(const float* x, const float* y, float* result, int n) {
    if (n == 1) throw std::runtime_error(std::string("read: ") + stolen_dot);
    CUDA_CHECK(cudaMemset(result, 0, sizeof(float)));
    dot_kernel<<<(n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024, 256>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
