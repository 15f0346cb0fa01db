// What a running CUDA thread sees: threadIdx, blockIdx, blockDim, gridDim and
// warpSize. Each is a variable of the worker thread that runs the block; the
// scheduler sets threadIdx whenever it switches to another CUDA thread.
#pragma once

#include "vector_types.h"

extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;
constexpr int warpSize = 32;

namespace cudacpu {

// A place in the student's source, for diagnostics.
struct Site {
    const char* file;
    int line;
};

namespace detail {
// Where the running CUDA thread last passed a `return` of its kernel (the
// driver inserts the note before each one and before the closing brace).
extern __thread Site t_exit_site;
inline void note_exit(const char* file, int line) { t_exit_site = Site{file, line}; }
}  // namespace detail

}  // namespace cudacpu

#define CUDACPU_HERE (::cudacpu::Site{__FILE__, __LINE__})
