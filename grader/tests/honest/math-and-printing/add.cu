// add: one thread per element, grid-stride. Uses <cmath> on the host to size the grid, printf and
// std::cout for a debug line, std::ostringstream, std::min and std::max.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cuda_check.h"
#include "tasks.h"

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, long n) {
    for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long>(blockDim.x) * gridDim.x)
        c[i] = a[i] + b[i];
}

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    const long n = static_cast<long>(rows) * cols;
    const int threads = 256;
    const double wanted = std::ceil(static_cast<double>(n) / threads);
    const int blocks = static_cast<int>(std::max(1.0, std::min(wanted, std::sqrt(65535.0) * 256)));
    if (n < 0) {
        std::ostringstream note;
        note << "add: " << rows << "x" << cols << " in " << blocks << " blocks, log2 " << std::log2(double(n));
        std::printf("%s\n", note.str().c_str());
        std::cout << note.str() << std::endl;
    }
    add_kernel<<<blocks, threads>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}

ADD_TYPES(INSTANTIATE_ADD)
