#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "dtype.h"
#include "registry.h"
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

TEST_CASE("at K = 4096 the float32 matmul bound is far below the size of the result it guards") {
    // A wrong index or a missing tile changes an element by about its own size,
    // sqrt(K) E|ab| ~ 16 here; even one missing term changes it by about E|ab| =
    // 0.25. The matmul bound (sqrt_k, c0 = 8) stays near 0.03; the worst-case
    // linear bound would be 0.5 and let a missing term through.
    const Tolerance t = find_task("matmul_fast")->tolerance;
    const double u = unit_roundoff(DType::f32), m = 4096 * 0.25;
    const double bound = tolerance_bound(t, 4096, u, m, 0);
    CHECK(bound == doctest::Approx(8 * 64 * u * m));
    CHECK(bound <= 0.25 / 8);  // a missing term is 8 bounds on average
    CHECK(tolerance_bound({ToleranceModel::linear_k, 2}, 4096, u, m, 0) == doctest::Approx(0.5));
}

TEST_CASE("the growth factor is the bound in units of u times the magnitude") {
    CHECK(tolerance_growth({ToleranceModel::sqrt_k, 8}, 4096) == 512);
    CHECK(tolerance_growth({ToleranceModel::linear_k, 2}, 4096) == 8192);
    CHECK(tolerance_growth({ToleranceModel::exact, 0}, 4096) == 0);
}

TEST_CASE("the sqrt bound never allows more than the worst-case linear one") {
    const Tolerance t{ToleranceModel::sqrt_k, 8};
    CHECK(tolerance_growth(t, 1) == 2);    // 2K below K = 16
    CHECK(tolerance_growth(t, 13) == 26);
    CHECK(tolerance_growth(t, 16) == 32);  // where they meet
    CHECK(tolerance_growth(t, 64) == 64);  // 8 sqrt(K) above
}

TEST_CASE("a coarse error is one within 2^-5 / sqrt(K) of the magnitude") {
    CHECK(coarse_relative_limit(1) == doctest::Approx(1.0 / 32));
    CHECK(coarse_relative_limit(4096) == doctest::Approx(1.0 / 32 / 64));
    // A missing term puts the worst element ~5.6 m / K off (products up to 1.25^2 against a mean of 0.28):
    for (double k : {16.0, 521.0, 4096.0, 8192.0}) CHECK(5.6 / k > coarse_relative_limit(k));
}
