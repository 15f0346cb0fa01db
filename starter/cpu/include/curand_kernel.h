// <curand_kernel.h> is a CUDA library the CPU backend does not provide: cudacpu.py
// reports a file that includes it as "needs a GPU" before it gets here.
#pragma once
#if !defined(CUDACPU_SCANNING)
#error "needs a GPU: <curand_kernel.h> is not provided by the CPU backend"
#endif
