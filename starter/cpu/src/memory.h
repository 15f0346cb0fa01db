// Device memory: host memory the runtime keeps a registry of, so that it can
// check what kernels and copies are given and describe an address in an
// out-of-bounds report ("c[1024] but c has 1024 elements").
//
// Under AddressSanitizer every cudaMalloc allocation is surrounded by 4 KiB
// of poisoned guard bytes (so a kernel running a little past an array never
// lands in another allocation or in the allocator's own bookkeeping), and
// cudacpu_set_valid_range() poisons the unused slack around an array placed
// inside an allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../include/cuda_runtime.h"

namespace cudacpu {

// Whether a kernel may be handed `p`: inside (or one past the end of) device,
// managed or page-locked memory, or a __device__ symbol.
bool kernel_accessible(const void* p);

// "c[1024] but c has 1024 elements" / "4 bytes past the end of a 4096-byte
// device allocation" / "" when `addr` is not near any device memory.
std::string describe_device_address(const void* addr);

// Copies between any kind of memory, checking device-side ranges; the
// message explains a cudaErrorInvalidValue.
cudaError_t checked_copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, const char* call);
cudaError_t checked_set(void* dst, int value, std::size_t count, const char* call);

// The [start, end) ranges of all device-accessible memory, sorted (for the race checker).
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device_ranges();

// Frees every allocation (cudaDeviceReset).
void free_all_device_memory();

}  // namespace cudacpu
