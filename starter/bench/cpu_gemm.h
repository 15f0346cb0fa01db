// Matrix multiply on the CPU, three ways: the CPU side of the bench's
// CPU-versus-GPU comparison. Row-major float c = a · b with a (m x k),
// b (k x n), c (m x n), one thread, float accumulation (as the GPU kernels).
//
//   simple         the textbook triple loop: for each c[i][j], sum a[i][p] * b[p][j].
//                  The inner loop walks b down a column, n floats apart: once b
//                  outgrows the cache, nearly every term is a cache miss.
//   pretransposed  copies b into b^T first (timed with it), so the inner loop
//                  reads two rows, a[i][.] and bt[j][.], one after the other.
//                  Contiguous, but each step waits for the last addition.
//   blocked        loops over tiles of c, a and b small enough to stay in the
//                  cache, in the order i, p, j: the inner loop updates a row
//                  of c from a row of b, which the compiler turns into vector
//                  instructions.
#pragma once

#include <string>
#include <vector>

#include "tolerance.h"

using CpuGemmFn = void (*)(const float* a, const float* b, float* c, int m, int n, int k);

void cpu_gemm_simple(const float* a, const float* b, float* c, int m, int n, int k);
void cpu_gemm_pretransposed(const float* a, const float* b, float* c, int m, int n, int k);
void cpu_gemm_blocked(const float* a, const float* b, float* c, int m, int n, int k);

struct CpuGemm {
    const char* impl;  // the bench row's impl: "cpu-simple", "cpu-pretransposed", "cpu-blocked"
    CpuGemmFn run;
};
const std::vector<CpuGemm>& cpu_gemms();

// Checks `samples` elements of c, spread over it, against a float64 sum of the
// same products, within `tol`. Returns "" when all pass, else the first wrong
// element described ("c[3][17] = 1.5, expected 2.25 (within 1e-05)").
std::string check_gemm_samples(const float* a, const float* b, const float* c, int m, int n, int k, Tolerance tol,
                               int samples);
