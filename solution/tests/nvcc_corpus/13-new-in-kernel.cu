// new/delete and malloc/free in device code (nvcc accepts them: the device heap).
#include <cstdlib>
#include "cuda_check.h"
#include "tasks.h"

__global__ void k(float* out) {
    float* p = new float[4];
    float* q = static_cast<float*>(malloc(4 * sizeof(float)));
    p[0] = 1.0f;
    q[0] = 2.0f;
    out[threadIdx.x] = p[0] + q[0];
    delete[] p;
    free(q);
}

void launch(float* out) {
    k<<<1, 32>>>(out);
    CUDA_CHECK_LAUNCH();
}
