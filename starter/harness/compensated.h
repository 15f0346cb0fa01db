// Sums of products to about twice float64's precision (Ogita, Rump and Oishi,
// "Accurate sum and dot product", 2005: Dot2). The float64 references use it
// when the inputs are float64 themselves: their products are not exact in
// float64, so a plain float64 sum would be about as wrong as the student's and
// could not judge it. Each product's rounding error comes from an FMA, each
// addition's from TwoSum, and the errors are added up on the side.
#pragma once

#include <math.h>

#include "counter_rng.h"  // HOST_DEVICE

// Rounded products and sums that the compiler may not fuse into an FMA: the
// error terms below are exact only for separately rounded operations.
#if defined(__CUDA_ARCH__)
#define COMPENSATED_MUL(x, y) __dmul_rn(x, y)
#define COMPENSATED_ADD(x, y) __dadd_rn(x, y)
#else
#define COMPENSATED_MUL(x, y) ((x) * (y))
#define COMPENSATED_ADD(x, y) ((x) + (y))
#endif

struct CompensatedSum {
    double sum = 0, error = 0;

    HOST_DEVICE void add_product(double x, double y) {
        const double p = COMPENSATED_MUL(x, y);
        const double p_error = ::fma(x, y, -p);  // exact: x y = p + p_error
        const double s = COMPENSATED_ADD(sum, p);
        const double z = s - sum;
        const double s_error = (sum - (s - z)) + (p - z);  // exact: sum + p = s + s_error (TwoSum)
        sum = s;
        error += p_error + s_error;
    }

    // For a product known to be exact in float64 (of float32 or int32 inputs): the same sum, without
    // the FMA that would find its rounding error to be 0 (a library call on a CPU built without FMA).
    HOST_DEVICE void add_exact_product(double x, double y) {
        const double p = COMPENSATED_MUL(x, y);
        const double s = COMPENSATED_ADD(sum, p);
        const double z = s - sum;
        error += (sum - (s - z)) + (p - z);
        sum = s;
    }

    HOST_DEVICE double value() const { return sum + error; }
};
