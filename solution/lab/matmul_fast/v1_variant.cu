// Version 1 with one configuration, as the sweep's candidate v<MATMUL_FAST_VARIANT>:
//   nvcc ... -DMATMUL_FAST_VARIANT=31 -c v1_variant.cu     (sweep.sh builds one object per variant)
#include "../candidates.h"
#include "v1_variants.cuh"

#ifndef MATMUL_FAST_VARIANT
#error "build with -DMATMUL_FAST_VARIANT=n, n a VariantConfig of v1_variants.cuh"
#endif

namespace {

const bool registered_v1 = lab::add_candidates({lab::matmul_candidate(
    "v" + std::to_string(MATMUL_FAST_VARIANT), "version 1, VariantConfig<" + std::to_string(MATMUL_FAST_VARIANT) + ">",
    lab::v1::matmul_fast_variant<MATMUL_FAST_VARIANT>)});

}  // namespace
