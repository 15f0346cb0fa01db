// CUDA splits its runtime over several headers; the CPU backend has them all in one.
#pragma once
#include "cuda_runtime.h"
