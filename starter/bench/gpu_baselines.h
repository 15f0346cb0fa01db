// What the bench measures on the GPU beside the kernels: cuBLAS SGEMM in plain
// FP32, the naive matmul with inverted indexing, and a device copy moving as
// many bytes as a memory-bound task must. The first two are tasks of the
// registry with another launcher, so the harness's case runner checks their
// results and times them exactly as it does the kernels'.
#pragma once

#include <cstddef>
#include <memory>

#include "cublas_check.h"
#include "registry.h"
#include "timing.h"

// matmul_fast's task (float32, same checks) launching cublasSgemm through a
// handle in pedantic math mode: no TF32, no tensor cores.
Task cublas_sgemm_task(std::shared_ptr<CublasHandle> handle);
std::shared_ptr<CublasHandle> pedantic_cublas();

// matmul_naive's task (float32 only) launching the inverted-indexing kernel of
// naive_inverted.cu.
Task naive_inverted_task() __attribute__((weak));  // linked into the solution's bench only

// One cudaMemcpy device to device of bytes_moved / 2 bytes, which reads and
// writes bytes_moved in all; timed like a kernel (L2 flushed, adaptive sampling).
struct CopyTiming {
    std::size_t bytes_moved = 0;
    TimingResult timing;
    double gbps() const;
};
CopyTiming time_device_copy(std::size_t bytes_moved, const TimingOptions& options, L2Flusher& flusher);
