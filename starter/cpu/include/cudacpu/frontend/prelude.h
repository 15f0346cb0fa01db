// What the front-end check (driver/frontend.py) gives clang in place of the CUDA toolkit: CUDA's qualifiers as
// clang's attributes, and declarations (no definitions: the check only parses) of the device functions and the
// runtime API a task file uses, each in the execution space nvcc gives it. A name missing here is only an error
// the check does not report; a name declared in the wrong space would be a false report, so none is guessed.
#pragma once

#define __CUDACC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
// The version clang's own CUDA headers read (the 9.2+ launch API, the _sync intrinsics, CUDA 11's additions).
#define CUDA_VERSION 12000
#define CUDART_VERSION 13000

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define __device_builtin__
#define __maxnreg__(n)

// As clang's own CUDA runtime wrapper does: its device overloads of the math functions are declared before the C
// library's, and clang's <new> wrapper needs malloc and free.
#include <__clang_cuda_math_forward_declares.h>
#include <cmath>
#include <cstdlib>
#include <stdlib.h>
#include <string.h>
#include <cstddef>
#include <cstdint>
#include <climits>
#include "__clang_cuda_builtin_vars.h"

// The vector types, dim3 and make_float4() and the like are usable on both sides.
#pragma clang force_cuda_host_device begin
#include "../vector_types.h"
#pragma clang force_cuda_host_device end

#include <__clang_cuda_libdevice_declares.h>
#include <__clang_cuda_device_functions.h>
#include <__clang_cuda_math.h>

extern "C" {
__device__ int vprintf(const char*, const char*);
__device__ void free(void*) __attribute((nothrow));
__device__ void* malloc(size_t) __attribute((nothrow)) __attribute__((malloc));
__device__ void __assertfail(const char* message, const char* file, unsigned line, const char* function,
                             size_t char_size);
__device__ static inline void __assert_fail(const char* message, const char* file, unsigned line,
                                            const char* function) {
    __assertfail(message, file, line, function, sizeof(char));
}
__device__ int printf(const char*, ...);
}
namespace std {
__device__ static inline void free(void* p) { ::free(p); }
__device__ static inline void* malloc(size_t size) { return ::malloc(size); }
}  // namespace std

__device__ inline __cuda_builtin_threadIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_threadIdx_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_blockIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockIdx_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_blockDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockDim_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_gridDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_gridDim_t::operator uint3() const { return {x, y, z}; }

// What clang's intrinsics header takes from the toolkit's headers.
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
extern "C" {
__device__ unsigned int __isGlobal(const void* p);
__device__ unsigned int __isShared(const void* p);
__device__ unsigned int __isConstant(const void* p);
__device__ unsigned int __isLocal(const void* p);
__device__ size_t __cvta_generic_to_global(const void* p);
__device__ size_t __cvta_generic_to_shared(const void* p);
__device__ size_t __cvta_generic_to_constant(const void* p);
__device__ size_t __cvta_generic_to_local(const void* p);
__device__ void* __cvta_global_to_generic(size_t a);
__device__ void* __cvta_shared_to_generic(size_t a);
__device__ void* __cvta_constant_to_generic(size_t a);
__device__ void* __cvta_local_to_generic(size_t a);
}

#include <__clang_cuda_cmath.h>
#include <__clang_cuda_intrinsics.h>

// The atomics, in the types CUDA gives each (its device_atomic_functions.h and sm_60's).
#define CUDACPU_FE_ATOMIC(name, T) \
    __device__ T name(T* address, T value); \
    __device__ T name##_block(T* address, T value); \
    __device__ T name##_system(T* address, T value);
#define CUDACPU_FE_INTEGER_ATOMICS(T) \
    CUDACPU_FE_ATOMIC(atomicAdd, T) CUDACPU_FE_ATOMIC(atomicSub, T) CUDACPU_FE_ATOMIC(atomicExch, T) \
    CUDACPU_FE_ATOMIC(atomicMin, T) CUDACPU_FE_ATOMIC(atomicMax, T) CUDACPU_FE_ATOMIC(atomicAnd, T) \
    CUDACPU_FE_ATOMIC(atomicOr, T) CUDACPU_FE_ATOMIC(atomicXor, T) \
    __device__ T atomicCAS(T* address, T compare, T value); \
    __device__ T atomicCAS_block(T* address, T compare, T value); \
    __device__ T atomicCAS_system(T* address, T compare, T value);
CUDACPU_FE_INTEGER_ATOMICS(int)
CUDACPU_FE_INTEGER_ATOMICS(unsigned int)
CUDACPU_FE_INTEGER_ATOMICS(unsigned long long int)
CUDACPU_FE_ATOMIC(atomicMin, long long int)
CUDACPU_FE_ATOMIC(atomicMax, long long int)
CUDACPU_FE_ATOMIC(atomicAdd, float)
CUDACPU_FE_ATOMIC(atomicAdd, double)
CUDACPU_FE_ATOMIC(atomicExch, float)
CUDACPU_FE_ATOMIC(atomicInc, unsigned int)
CUDACPU_FE_ATOMIC(atomicDec, unsigned int)
__device__ unsigned short int atomicCAS(unsigned short int* address, unsigned short int compare,
                                        unsigned short int value);
#undef CUDACPU_FE_INTEGER_ATOMICS
#undef CUDACPU_FE_ATOMIC

// What clang's intrinsics header leaves to the toolkit's sm_80 and later headers.
__device__ unsigned __reduce_add_sync(unsigned mask, unsigned value);
__device__ int __reduce_add_sync(unsigned mask, int value);
__device__ unsigned __reduce_min_sync(unsigned mask, unsigned value);
__device__ int __reduce_min_sync(unsigned mask, int value);
__device__ unsigned __reduce_max_sync(unsigned mask, unsigned value);
__device__ int __reduce_max_sync(unsigned mask, int value);
__device__ unsigned __reduce_and_sync(unsigned mask, unsigned value);
__device__ unsigned __reduce_or_sync(unsigned mask, unsigned value);
__device__ unsigned __reduce_xor_sync(unsigned mask, unsigned value);
__device__ void __nanosleep(unsigned ns);

// The runtime API (host functions), as the CPU backend declares it: nvcc's own is host-only too.
#include "../runtime_api.h"

// The runtime calls that take a kernel (host functions; the CPU backend's take its own kernel wrapper). Defined,
// to nothing: a kernel in an unnamed namespace makes an undefined template an error.
template <class F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute attr, int value) { return cudaSuccess; }
template <class F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F* kernel) { return cudaSuccess; }
template <class F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F* kernel, int block_size, size_t smem) { return cudaSuccess; }
template <class F>
cudaError_t cudaLaunchKernel(F* kernel, dim3 grid, dim3 block, void** args, size_t smem = 0,
                             cudaStream_t stream = 0) { return cudaSuccess; }

// What clang turns a <<< >>> launch into (clang's runtime wrapper declares it the same way).
extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0, void* stream = 0);
extern "C" int cudaConfigureCall(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0, cudaStream_t stream = 0);

// new and delete in device code (the device heap), as clang's <new> wrapper declares them: the check leaves
// clang's wrappers of the standard headers out, whose std::min and std::max nvcc does not have in device code.
#include <new>
__device__ void* operator new(size_t size);
__device__ void* operator new[](size_t size);
__device__ void* operator new(size_t size, const std::nothrow_t&) noexcept;
__device__ void* operator new[](size_t size, const std::nothrow_t&) noexcept;
__device__ void operator delete(void* p) noexcept;
__device__ void operator delete[](void* p) noexcept;
__device__ void operator delete(void* p, size_t) noexcept;
__device__ void operator delete[](void* p, size_t) noexcept;
__device__ inline void* operator new(size_t, void* p) noexcept { return p; }
__device__ inline void* operator new[](size_t, void* p) noexcept { return p; }
