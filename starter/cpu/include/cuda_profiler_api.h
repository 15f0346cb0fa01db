// Profiler markers: nothing to profile on the CPU backend, so they do nothing.
#pragma once
#include "cuda_runtime.h"
