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
//   sqrt_k:   g(K) = sqrt(K), but never more than the worst-case 2·K (so below
//             K = 16 it is the linear bound). The probabilistic bound of Higham
//             and Mary (2019), ~ sqrt(K)·u·m, holds with overwhelming probability
//             for rounding errors that are not systematic, whatever the
//             summation order. For dot products of length up to 2^28, K·u
//             exceeds 1 in float and the worst-case bound would accept any
//             answer; summations that stagnate
//             (one float accumulator over millions of terms) fail it, as they
//             should. Matmuls use it too: the largest single float32 error we
//             simulated (one accumulator over all of K, the least accurate
//             honest order, on inputs as counter_rng.h makes them) was
//             0.9·sqrt(K)·u·m at K = 13 .. 43 and under 0.3·sqrt(K)·u·m from
//             K = 500 on, so c0 = 8 leaves a factor of 9 to 25; a missing term
//             (an error of about m / K) fails from K ~ 200 on, where the linear
//             bound would still accept it at K = 4096.
//   exact:    integers, fill, transpose: no rounding is involved, so bound = 0.
// Integer element types always compare exactly (u = 0, tiny = 0).
//
// The statistical rule (matmuls: mean_c > 0). A float32 matmul computed in
// half precision or TF32 (tensor cores) has every element only slightly off:
// at K = 4096 each error stays well inside any per-element bound an honest
// float32 sum needs. What gives it away is the size of the errors on average.
// With e_i = |c_i - r_i| / (u·m_i), the mean of e_i over the output must be at most
//
//     mean_c + 0.4 · sqrt(K / N)           (N output elements)
//
// Simulated means of e (1000-2000 sums each, inputs as counter_rng.h makes them;
// float32: the worst of shifts 0 and +-1/4, lower precision: the mildest):
//   K                        1     43    521   1024   4096   8192
//   float32, one accumulator 0.37  0.40  1.0   1.4    2.7    3.8   (FMA or not)
//   half-rounded products    2960  537   162   112    58     40    (float accumulator)
//   half or TF32 inputs      3770  712   203   142    72     49;   bfloat16 ~8x more
// mean_c = 12 sits between the two with a factor of at least 3 either way up to
// K = 8192 (the float32 mean grows like sqrt(K) only through the inputs' shift).
// float64 (inputs with full 53-bit significands, the reference compensated to
// about 2^-106; `precision_sim.py --float64`, 300-1000 sums each):
//   K                        1     43    521   1024   4096   8192
//   float64, one accumulator 0.00  0.39  1.04  1.42   2.70   3.77  (largest e / sqrt(K): 0.76)
//   float accumulator        1.9e8 1.5e8 1.5e8 1.6e8  1.4e8  1.5e8
//   float tiles              3.1e8 1.7e8 1.5e8 1.4e8  1.5e8  1.3e8
// so the same c0 and mean_c hold for float64, and a float64 kernel that keeps a
// value in float fails every element, not only the average.
// The second term covers small outputs: one float32 element's e has a standard
// deviation below 0.05·sqrt(K) from K = 500 on, so with N elements 0.4·sqrt(K / N)
// is about eight standard deviations of the mean (a single-element output is
// judged by the per-element bound alone, in effect). The simulation is
// docs/tolerance/precision_sim.py in the course's repository.
#pragma once

#include <cfloat>
#include <math.h>

#include "counter_rng.h"  // HOST_DEVICE

enum class ToleranceModel { exact, linear_k, sqrt_k };

struct Tolerance {
    ToleranceModel model = ToleranceModel::exact;
    double c0 = 0;
    double mean_c = 0;  // the statistical rule's limit on the mean error, in units of u·m; 0: no such rule
};

// The rule's allowance for small outputs: 0.4 · sqrt(K / N), above.
constexpr double kMeanErrorSmallOutput = 0.4;
// 2 · K · u · m, valid for any order of a K-term sum (Higham 3.1), with room for the reference's rounding.
constexpr double kWorstCaseC0 = 2;
// An output that fails while every element is within 2^-5 / sqrt(K) of its
// magnitude m is only coarsely rounded (the worst half, bfloat16 and TF32
// errors stay below it), not wrong in its indexing: a missing or extra term
// puts the worst element off by about 5 m / K, above it for every K up to 30,000.
inline double coarse_relative_limit(double k_terms) { return 1.0 / 32 / ::sqrt(k_terms); }

const char* tolerance_model_name(ToleranceModel m);  // "exact", "linear_k", "sqrt_k"

// c0 · g(K): the bound in units of u·m.
HOST_DEVICE inline double tolerance_growth(Tolerance t, double k_terms) {
    switch (t.model) {
        case ToleranceModel::exact: return 0;
        case ToleranceModel::linear_k: return t.c0 * k_terms;
        case ToleranceModel::sqrt_k: return ::fmin(kWorstCaseC0 * k_terms, t.c0 * ::sqrt(k_terms));
    }
    return 0;
}

HOST_DEVICE inline double tolerance_bound(Tolerance t, double k_terms, double u, double magnitude,
                                          double tiny) {
    if (t.model == ToleranceModel::exact) return 0;
    return tolerance_growth(t, k_terms) * u * magnitude + tiny;
}

HOST_DEVICE inline bool within_tolerance(double got, double expected, double bound) {
    // Written with comparisons only, so NaN (every comparison false) and Inf fail
    // the same way on the host and on the device.
    return ::fabs(got) <= DBL_MAX && ::fabs(got - expected) <= bound;
}

// The statistical rule's limit on the mean of e_i for an output of `elements`
// elements; 0 when the task has no such rule or the type is exact (u = 0).
inline double mean_error_limit(Tolerance t, double k_terms, double elements, double u) {
    if (t.mean_c <= 0 || u <= 0 || t.model == ToleranceModel::exact || elements < 1) return 0;
    return t.mean_c + kMeanErrorSmallOutput * ::sqrt(k_terms / elements);
}

// The mean of e_i from the mean of |c_i - r_i| / bound_i, which the comparison
// sums anyway: bound_i = growth · u · m_i + tiny, and tiny is far below u·m_i
// for every input the generator makes.
inline double mean_error_from_ratio(Tolerance t, double k_terms, double mean_ratio) {
    return mean_ratio * tolerance_growth(t, k_terms);
}
