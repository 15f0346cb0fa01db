// <<< >>> on a host function template.
#include "cuda_check.h"
#include "tasks.h"

template <typename T>
void zero_all(T* x, int n) { for (int i = 0; i < n; ++i) x[i] = T(0); }

void launch(float* x, int n) {
    zero_all<float><<<(n + 255) / 256, 256>>>(x, n);
    CUDA_CHECK_LAUNCH();
}
