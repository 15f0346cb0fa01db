// The CPU backend's stand-in for CUDA's <cuda_runtime.h>: the runtime API,
// the built-in types and variables, and the device functions kernels call.
// See ../README.md for what is emulated and what needs a GPU.
#pragma once

#include <math.h>
#include <stdio.h>

#include <cstddef>
#include <cstdint>

#include "cudacpu/qualifiers.h"
#include "cudacpu/vector_types.h"
#include "cudacpu/error_codes.h"
#include "cudacpu/runtime_api.h"
#include "cudacpu/extension.h"
#include "cudacpu/device_state.h"
#include "cudacpu/collectives.h"
#include "cudacpu/atomics.h"
#include "cudacpu/intrinsics.h"
#include "cudacpu/launch.h"
