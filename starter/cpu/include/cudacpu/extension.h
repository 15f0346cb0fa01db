// What the CPU backend offers beyond CUDA's API: naming arrays for
// out-of-bounds reports, choosing the thread schedule, a time limit per
// launch, and reading the last diagnostic. C linkage, so that any harness
// can call it; a program built for a GPU simply does not call it.
#pragma once

#include <cstddef>

#include "error_codes.h"

extern "C" {

// Out-of-bounds reports name `ptr` as an array: an access just outside it
// reads "kernel read a[1024] but a has 1024 elements". `ptr` may lie inside a
// larger cudaMalloc allocation (an array placed at an offset); the name is
// dropped when that allocation is freed.
void cudacpu_name_allocation(const void* ptr, const char* name, std::size_t elements, std::size_t element_size);

// Makes [ptr, ptr + bytes) the only valid part of the allocation holding ptr:
// with AddressSanitizer, any kernel access to the rest of the allocation (the
// slack around an array placed inside it) is reported. Calling it again for
// the same allocation replaces the range. Without AddressSanitizer it only
// records the range. cudaErrorInvalidValue if ptr is not in device memory.
cudaError_t cudacpu_set_valid_range(const void* ptr, std::size_t bytes);

// The order in which the threads of a block run between barriers, and in
// which blocks are started:
//   "default"      thread 0, 1, 2, ... (x fastest, then y, then z); block 0, 1, 2, ...
//   "reverse"      the last thread first; the last block first
//   "random:SEED"  a shuffled order per block and barrier, and of blocks: the same for the same SEED
// A kernel that is right gives the same result under every schedule; a
// missing __syncthreads(), or a block that relies on running first, usually does not. The environment variable
// CUDA_CPU_SCHEDULE sets the initial schedule. Returns 0, or -1 for an
// unknown spec (the schedule is then unchanged).
int cudacpu_set_schedule(const char* spec);
const char* cudacpu_schedule(void);

// Seconds a launch may run before it is stopped and reported (a kernel that
// never finishes); 0 turns the limit off. Default 60, or CUDA_CPU_LAUNCH_TIMEOUT.
// A stopped launch returns cudaErrorLaunchTimeout, as a GPU's watchdog does.
void cudacpu_set_launch_timeout(double seconds);
double cudacpu_launch_timeout(void);

// The report of the last launch that failed in this process (a thread that
// returned before a barrier, an out-of-bounds access, a timeout, ...), or "".
// Each report is also printed to stderr unless cudacpu_set_quiet(1).
const char* cudacpu_last_diagnostic(void);
void cudacpu_clear_diagnostic(void);
void cudacpu_set_quiet(int quiet);

// After a kernel fault every CUDA call returns the fault's error, as on a
// GPU. This clears it, so that the program can go on (a GPU cannot); it
// returns the error it cleared.
cudaError_t cudacpu_clear_sticky_error(void);

// How many worker threads run blocks (default: the CPUs this process may use,
// or CUDA_CPU_WORKERS). Takes effect at the next launch.
void cudacpu_set_workers(int workers);
int cudacpu_workers(void);

// 1 when the program runs under AddressSanitizer (out-of-bounds accesses are
// reported), else 0.
int cudacpu_checking_memory(void);

// Performance counters (cpu/README.md, "Performance counters"): from now on,
// every launch of kernels built with `cudacpu.py compile --racecheck` is
// counted (not race-checked), and one JSON line per launch is appended to
// `path` ("-": to no file, only cudacpu_profile_last). NULL or "" stops.
// The environment variable CUDA_CPU_PROFILE=path does the same from the start.
// Returns 0, or -1 when this program has no kernels built for it (nothing is counted).
int cudacpu_set_profile(const char* path);
// The JSON line of the last profiled launch ("" if none); valid until the next one.
const char* cudacpu_profile_last(void);
}
