// Included ahead of every .cu file the driver compiles (-include): the whole
// CUDA stand-in, plus what only rewritten kernel code uses (launches, shared
// variables).
#pragma once

#include "../cuda_runtime.h"
#include "launch.h"
#include "shared_memory.h"
