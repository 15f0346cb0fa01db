// A host member function called on an object in a kernel.
#include "cuda_check.h"
#include "tasks.h"

struct Scale {
    float factor;
    float apply(float v) const { return v * factor; }
};

__global__ void k(float* x, Scale s) { x[threadIdx.x] = s.apply(x[threadIdx.x]); }

void launch(float* x) {
    k<<<1, 32>>>(x, Scale{2.0f});
    CUDA_CHECK_LAUNCH();
}
