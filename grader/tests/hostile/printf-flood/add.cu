// add — c = a + b, element by element (correct), with a gigabyte of "debug" output.
//
// (hostile corpus: 1 GiB of printf on the first call; the grader must keep at
// most its output cap in memory, mark the cut, and grade the kernel normally)
#include <cstdio>
#include <cstring>

#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long long n) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    static bool printed = false;
    if (!printed) {
        printed = true;
        char line[1024];
        std::memset(line, 'x', sizeof line - 2);
        line[sizeof line - 2] = '\n';
        line[sizeof line - 1] = '\0';
        for (int i = 0; i < (1 << 20); ++i) std::fputs(line, stdout);  // 1 GiB
        std::fflush(stdout);
    }
    const long long n = static_cast<long long>(rows) * cols;
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
