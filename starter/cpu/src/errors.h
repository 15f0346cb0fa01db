// CUDA's error state, as the runtime keeps it: a last error per host thread
// (cudaGetLastError returns and clears it) and a sticky error per process
// (a kernel fault: every later call returns it until cleared).
#pragma once

#include "../include/cuda_runtime.h"

namespace cudacpu {

// Records `e` as this thread's last error and returns it, so that API
// functions can `return record(cudaErrorInvalidValue);`.
cudaError_t record(cudaError_t e);
// The sticky error, or cudaSuccess.
cudaError_t sticky_error();
void set_sticky_error(cudaError_t e);
// Whether `e` leaves the device unusable on a GPU (an illegal address, a
// launch failure, a timeout, a device-side assert).
bool is_sticky(cudaError_t e);

}  // namespace cudacpu
