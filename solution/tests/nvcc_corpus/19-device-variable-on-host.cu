// A __device__ variable read directly by host code (cudaMemcpyFromSymbol is the way).
#include "cuda_check.h"
#include "tasks.h"

__device__ int counter;

__global__ void k() { atomicAdd(&counter, 1); }

int launch() {
    k<<<1, 32>>>();
    CUDA_CHECK_LAUNCH();
    return counter;
}
