// CUDA's keywords for host C++. A kernel is an ordinary function that each
// fiber (CUDA thread) calls; device and constant variables are ordinary
// globals. __shared__ declarations inside kernels are rewritten by the driver
// (cudacpu.py) into references to the running block's shared memory; one it
// could not rewrite stops the build with a message instead of silently being
// shared by every block.
//
// __CUDA_ARCH__ stays undefined: code behind `#if __CUDA_ARCH__ >= 800` takes
// its portable branch here. (The driver's scan reads the file as the GPU
// would, with __CUDA_ARCH__ = 900, and reports inline PTX found there.)
#pragma once

#define CUDACPU 1
#ifndef CUDART_VERSION
#define CUDART_VERSION 13000
#endif

#if !defined(CUDACPU_SCANNING)
// nvcc says nothing of a kernel in an unnamed namespace (or static) that only a launch names; here the launch
// names it inside a template (the driver's rewrite), which g++'s -Wunused-function reads too late.
#define __global__ __attribute__((unused))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __device_builtin__
#define __grid_constant__
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
// (_Pragma takes exactly one string literal, hence the long line.)
#define __shared__ \
    _Pragma("GCC error \"cudacpu: this __shared__ declaration was not rewritten for the CPU backend (is it in a header or a macro?): write it as a plain declaration inside the kernel in the .cu file\"")
#endif
