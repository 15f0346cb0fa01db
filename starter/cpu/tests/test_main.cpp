// The CPU backend's test program: every test_*.cu/.cpp file linked together.
// doctest's own crash handlers would take the signals the runtime turns into
// CUDA errors (a kernel's segmentation fault is cudaErrorIllegalAddress).
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "doctest/doctest.h"
