// tasks.h — the contract between your kernels, the harness and the grader.
//
// Each task is a *host launcher*: the harness hands it device pointers and a
// shape, and the launcher chooses a grid and block and launches the kernel(s)
// on the default stream. Every matrix is row-major: element (r, c) of a
// rows x cols matrix lives at index r * cols + c.
//
// Do not change these declarations: the harness and the grader are compiled
// against them. Your code goes in kernels/<task>.cu, one file per task.
//
// What the harness does on every call of your launcher (the grader too):
//   * Every pointer is 16-byte aligned (float4, int4 and 16-byte cp.async are
//     legal), and none is promised to be more. The inputs and the output are
//     placed at a new address on every call: never keep results by pointer.
//   * Inputs are read-only. Each is compared with a copy after every call;
//     a kernel that writes into one (even as scratch space) fails.
//   * The output is filled with garbage (NaN, or a large negative int) before
//     every call, and every call's output is checked, timed runs included:
//     compute every element on every call.
//   * Inputs are random and use their whole type: float64 values carry all 53
//     bits, int32 values are as large as the task allows without overflow
//     (so routing them through float shows). Float inputs get a different
//     scale and offset in every run (a power of two between 1/16 and 16, a
//     shift of up to 1/4): do not assume a range. Every timed run gets inputs
//     of its own: no earlier call's result is the answer.
//   * Float tasks are float32 (or float64) arithmetic: besides a bound on each
//     element, the average error of a matmul must stay within what float32
//     gives, so half precision, bfloat16 or TF32 (tensor cores) fail.
//   * Each task file is compiled and linked on its own terms: one that does not
//     compile, or does not instantiate a templated task for every type listed
//     below, fails that task (or that type's cases) only; the rest still run.
//   * A timed run ends only when the whole GPU is idle: work on another stream
//     is timed too. A time faster than the GPU can physically do the work is
//     flagged and earns no performance credit.
#pragma once

#include <cstdint>
#include <stdexcept>

// ---------------------------------------------------------------------------
// Element types each templated task is graded on. The harness's registry and
// every kernel file expand these same lists, so a type is named in one place.
// ---------------------------------------------------------------------------
#define ADD_TYPES(X)       X(float) X(std::int32_t)
#define TRANSPOSE_TYPES(X) X(float) X(std::int32_t)
#define MATMUL_TYPES(X)    X(float) X(double) X(std::int32_t)

// fill: thread organization. A 2-D grid of 2-D blocks writes
//   out[r * cols + c] = r * cols + c      for every 0 <= r < rows, 0 <= c < cols.
void fill(std::int32_t* out, int rows, int cols);

// add: c = a + b, element by element, for rows x cols matrices.
template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols);

// transpose: out = in^T. `in` is rows x cols, `out` is cols x rows:
//   out[c * rows + r] = in[r * cols + c].
// Reads and writes must both be coalesced (use a shared-memory tile).
template <typename T>
void transpose(const T* in, T* out, int rows, int cols);

// matmul_*: c = a · b with a (m x k), b (k x n), c (m x n), any m, n, k >= 1.
//   matmul_naive: one thread per element of c, coalesced indexing.
//   matmul_tiled: shared-memory tiles; correct when sizes are not tile multiples.
//   matmul_fast:  the fastest float GEMM you can write (plain FP32 arithmetic).
template <typename T>
void matmul_naive(const T* a, const T* b, T* c, int m, int n, int k);
template <typename T>
void matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k);
void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k);

// dot: *result = sum over i of x[i] * y[i], for 1 <= n <= 2^28.
// `result` points to one float in device memory. The harness does NOT zero it
// for you: if you accumulate into it, set it first (the harness fills it with
// NaN before every run, so forgetting shows up as a wrong answer).
void dot(const float* x, const float* y, float* result, int n);

// ---------------------------------------------------------------------------
// Explicit instantiations: a kernel file ends with, e.g.,
//   ADD_TYPES(INSTANTIATE_ADD)
// which compiles add<T> for every type the harness tests.
// ---------------------------------------------------------------------------
#define INSTANTIATE_ADD(T) template void add<T>(const T*, const T*, T*, int, int);
#define INSTANTIATE_TRANSPOSE(T) template void transpose<T>(const T*, T*, int, int);
#define INSTANTIATE_MATMUL_NAIVE(T) \
    template void matmul_naive<T>(const T*, const T*, T*, int, int, int);
#define INSTANTIATE_MATMUL_TILED(T) \
    template void matmul_tiled<T>(const T*, const T*, T*, int, int, int);

// ---------------------------------------------------------------------------
// "Not implemented yet": a launcher you have not written yet says so by
// calling NOT_IMPLEMENTED_YET(). The harness reports that task as
// `not_implemented` (a status of its own, not a failure of your code).
// Delete the line when you write the launcher.
// ---------------------------------------------------------------------------
struct TaskNotImplemented : std::logic_error {
    using std::logic_error::logic_error;
};
#define NOT_IMPLEMENTED_YET() throw TaskNotImplemented(__func__)
