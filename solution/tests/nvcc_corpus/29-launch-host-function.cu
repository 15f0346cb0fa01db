// <<< >>> on an ordinary host function instead of a kernel.
#include "cuda_check.h"
#include "tasks.h"

void zero(float* x, int n) { for (int i = 0; i < n; ++i) x[i] = 0.0f; }

void launch(float* x, int n) {
    zero<<<1, 32>>>(x, n);
    CUDA_CHECK_LAUNCH();
}
