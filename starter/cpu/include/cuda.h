// <cuda.h> is CUDA's driver API. The CPU backend provides the runtime API
// only; many programs include <cuda.h> without using the driver API, so it
// gives them the runtime. A call of a driver function (cuInit, ...) is then
// reported as needing a GPU.
#pragma once
#include "cuda_runtime.h"
