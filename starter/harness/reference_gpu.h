// float64 references computed on the GPU, for shapes too large for the CPU.
// Trusted code linked only into the harness (never into student kernels).
#pragma once

#include <cstddef>

#include "dtype.h"

// value = A·B and magnitude = |A|·|B| in float64, for row-major a (m x k) and
// b (k x n) of element type t. Through cuBLAS DGEMM for float32 and int32 inputs
// (every product is exact in float64, and int32 sums too: the inputs are
// bounded so no partial sum passes 2^31); compensated for float64 inputs
// (compensated.h), whose products are not.
void gemm_reference_device(DType t, const void* a, const void* b, int m, int n, int k, double* value,
                           double* magnitude);

// value = sum x_i y_i and magnitude = sum |x_i y_i|, accumulated in float64.
void dot_reference_device(const float* x, const float* y, std::size_t n, double* value, double* magnitude);
