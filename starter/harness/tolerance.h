// The tolerance model: how far a result may be from the float64 reference.
//
// Each task's reference returns, per output element, the exact value r and a
// magnitude m: the sum of |terms| that were added to make it ((|A|·|B|)_ij for
// a matmul, |a| + |b| for add, sum |x_i y_i| for dot). The element c passes when
//
//     c is finite   and   |c - r| <= bound,
//     bound = c0 · g(K) · u · m + tiny
//
// with u the unit roundoff of the element type (2^-24 float, 2^-53 double),
// K the number of terms summed, and tiny the type's smallest normal number.
//   linear_k: g(K) = K. The classic worst-case bound for any summation order is
//             K·u·m (Higham, "Accuracy and Stability", 3.1); c0 = 2 leaves room
//             for the float64 reference's own rounding, which matters for double.
//   sqrt_k:   g(K) = sqrt(K). For dot products of length up to 2^28, K·u exceeds
//             1 in float and the worst-case bound would accept any answer; the
//             probabilistic bound of Higham and Mary (2019), ~ sqrt(K)·u·m, holds
//             with overwhelming probability for rounding errors that are not
//             systematic. Summations that stagnate (one float accumulator over
//             millions of terms) fail it, as they should.
//   exact:    integers, fill, transpose: no rounding is involved, so bound = 0.
// Integer element types always compare exactly (u = 0, tiny = 0).
#pragma once

#include <cfloat>
#include <math.h>

#include "counter_rng.h"  // HOST_DEVICE

enum class ToleranceModel { exact, linear_k, sqrt_k };

struct Tolerance {
    ToleranceModel model = ToleranceModel::exact;
    double c0 = 0;
};

const char* tolerance_model_name(ToleranceModel m);  // "exact", "linear_k", "sqrt_k"

HOST_DEVICE inline double tolerance_bound(Tolerance t, double k_terms, double u, double magnitude,
                                          double tiny) {
    switch (t.model) {
        case ToleranceModel::exact: return 0;
        case ToleranceModel::linear_k: return t.c0 * k_terms * u * magnitude + tiny;
        case ToleranceModel::sqrt_k: return t.c0 * ::sqrt(k_terms) * u * magnitude + tiny;
    }
    return 0;
}

HOST_DEVICE inline bool within_tolerance(double got, double expected, double bound) {
    // Written with comparisons only, so NaN (every comparison false) and Inf fail
    // the same way on the host and on the device.
    return ::fabs(got) <= DBL_MAX && ::fabs(got - expected) <= bound;
}
