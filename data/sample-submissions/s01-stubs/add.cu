// add — c = a + b, element by element, for rows x cols matrices.
//
// The harness calls add<float> and add<std::int32_t>; write the kernel once as
// a template. Adjacent threads should touch adjacent elements (coalescing).
// The matrices are contiguous, so you may treat them as one long array.
//
// Check it:  make test TASK=add      Time it:  make bench TASK=add
#include "cuda_check.h"
#include "tasks.h"

// TODO: your kernel.
// template <typename T>
// __global__ void add_kernel(const T* a, const T* b, T* c, int rows, int cols) { ... }

template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    // TODO: launch add_kernel<T> over every element, then CUDA_CHECK_LAUNCH().
    NOT_IMPLEMENTED_YET();
}

// Compiles add for every type the harness tests; keep this line.
ADD_TYPES(INSTANTIATE_ADD)
