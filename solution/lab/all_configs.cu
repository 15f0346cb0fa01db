// Every configuration of the lab in one translation unit, for CI, which has no
// GPU and two cores: one compile-only nvcc run proves that each still compiles
// against the shipped kernels and the harness (solution/tests/test_lab.py).
//   make -C solution/lab compile-check
#include "matmul_fast/classes.cu"     // the shipped matmul_fast, its tile classes and the lab's, every forced plan
#include "matmul_fast/v1_variants.cuh"
#include "transpose/variants.cu"      // transpose's versions

// Version 1's configurations (VariantConfig<n>): its launcher for each, which
// instantiates both of its kernels.
#define LAB_V1(n) template void lab::v1::matmul_fast_variant<n>(const float*, const float*, float*, int, int, int);
LAB_V1(0) LAB_V1(1) LAB_V1(2) LAB_V1(3) LAB_V1(4) LAB_V1(5) LAB_V1(6) LAB_V1(7) LAB_V1(8) LAB_V1(9)
LAB_V1(10) LAB_V1(11) LAB_V1(12) LAB_V1(13) LAB_V1(14) LAB_V1(15) LAB_V1(16) LAB_V1(17) LAB_V1(18)
LAB_V1(19) LAB_V1(20) LAB_V1(21) LAB_V1(22) LAB_V1(23) LAB_V1(24)
LAB_V1(30) LAB_V1(31) LAB_V1(32) LAB_V1(33) LAB_V1(34) LAB_V1(35) LAB_V1(36)
