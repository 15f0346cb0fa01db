// A static local variable in device code.
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(int* out) {
    static int calls = 0;
    out[threadIdx.x] = ++calls;
}

void launch(int* out) {
    k<<<1, 32>>>(out);
    CUDA_CHECK_LAUNCH();
}
