// rand() (a host C library function) in a kernel.
#include <cstdlib>
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(int* out) { out[threadIdx.x] = rand(); }

void launch(int* out) {
    k<<<1, 32>>>(out);
    CUDA_CHECK_LAUNCH();
}
