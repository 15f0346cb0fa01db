// The CPU backend's test program: every test_*.cu/.cpp file linked together.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "doctest/doctest.h"
