#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "dtype.h"
#include "tolerance.h"

TEST_CASE("the linear bound grows with K, the unit roundoff and the magnitude") {
    const Tolerance t{ToleranceModel::linear_k, 2};
    const double u = unit_roundoff(DType::f32);
    CHECK(u == doctest::Approx(std::ldexp(1.0, -24)));
    CHECK(tolerance_bound(t, 1000, u, 3.0, 0) == doctest::Approx(2 * 1000 * u * 3.0));
    CHECK(tolerance_bound(t, 2000, u, 3.0, 0) == doctest::Approx(2 * tolerance_bound(t, 1000, u, 3.0, 0)));
    CHECK(tolerance_bound(t, 1000, unit_roundoff(DType::f64), 3.0, 0) < tolerance_bound(t, 1000, u, 3.0, 0) * 1e-8);
}

TEST_CASE("the sqrt bound grows with the square root of K") {
    const Tolerance t{ToleranceModel::sqrt_k, 8};
    const double u = unit_roundoff(DType::f32);
    CHECK(tolerance_bound(t, 1 << 28, u, 1.0, 0) == doctest::Approx(8 * 16384 * u));
    CHECK(tolerance_bound(t, 4 * 1000, u, 1.0, 0) == doctest::Approx(2 * tolerance_bound(t, 1000, u, 1.0, 0)));
}

TEST_CASE("the bound keeps an absolute floor for tiny magnitudes") {
    const Tolerance t{ToleranceModel::linear_k, 2};
    CHECK(tolerance_bound(t, 10, unit_roundoff(DType::f32), 0.0, smallest_normal(DType::f32)) == FLT_MIN);
}

TEST_CASE("exact models and integers allow no error at all") {
    CHECK(tolerance_bound({ToleranceModel::exact, 0}, 100, 1e-3, 5.0, 1.0) == 0.0);
    CHECK(tolerance_bound({ToleranceModel::linear_k, 2}, 100, unit_roundoff(DType::i32), 5.0, smallest_normal(DType::i32)) == 0.0);
    CHECK(within_tolerance(7.0, 7.0, 0.0));
    CHECK_FALSE(within_tolerance(7.0, 8.0, 0.0));
}

TEST_CASE("NaN and infinity never pass, whatever the bound") {
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_FALSE(within_tolerance(std::nan(""), 1.0, 1e300));
    CHECK_FALSE(within_tolerance(inf, inf, 1e300));
    CHECK_FALSE(within_tolerance(-inf, 1.0, inf));
    CHECK(within_tolerance(1.0 + 1e-7, 1.0, 1e-6));
    CHECK_FALSE(within_tolerance(1.0 + 1e-5, 1.0, 1e-6));
}

TEST_CASE("at K = 4096 the float32 bound is far below the size of the result it guards") {
    // A wrong index or a missing tile changes an element by about its own size,
    // sqrt(K) E|ab| ~ 20 here; the bound stays near 0.5.
    const Tolerance t{ToleranceModel::linear_k, 2};
    const double bound = tolerance_bound(t, 4096, unit_roundoff(DType::f32), 4096 * 0.25, 0);
    CHECK(bound == doctest::Approx(0.5));
    CHECK(bound < std::sqrt(4096.0) * 0.25);
}
