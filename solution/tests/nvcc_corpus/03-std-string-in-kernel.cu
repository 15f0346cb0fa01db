// std::string in device code.
#include <string>
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(int* out) {
    std::string s = "abc";
    out[threadIdx.x] = static_cast<int>(s.size());
}

void launch(int* out) {
    k<<<1, 32>>>(out);
    CUDA_CHECK_LAUNCH();
}
