// The harness's own unit tests: everything that needs no GPU.
//   build/<kernels>/unit_tests           (HARNESS_DATA_DIR=../data by default)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
