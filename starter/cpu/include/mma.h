// <mma.h> is a GPU-only part of CUDA: the CPU backend cannot run code that uses
// it. cudacpu.py reports the file as "needs a GPU" before it gets here.
#pragma once
#if !defined(CUDACPU_SCANNING)
#error "needs a GPU: <mma.h> is not emulated by the CPU backend"
#endif
