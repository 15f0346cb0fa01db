// The matmul tolerance on real arithmetic, on the CPU: sums of products of
// inputs as the generator makes them, computed the way an honest float32
// kernel does (one FMA accumulator over all of K, the least accurate honest
// order) and the way a half-precision kernel does (each product rounded to
// half, float accumulator). The per-element bound passes both at large K; the
// statistical rule (tolerance.h) tells them apart.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "counter_rng.h"
#include "dtype.h"
#include "registry.h"
#include "tolerance.h"

namespace {

// x rounded to nearest (ties to even) with `bits` significand bits: 11 for half (its range is ignored).
double round_significand(double x, int bits) {
    if (x == 0) return 0;
    int e = 0;
    std::frexp(x, &e);
    const double q = std::ldexp(1.0, e - bits);
    return std::nearbyint(x / q) * q;
}

struct Sums {
    double mean_e_float = 0, mean_e_half = 0;
    double worst_e_float = 0;         // largest single error, units of u·m
    double worst_relative_half = 0;   // largest |error| / m of the half-precision sums
    double half_within_element = 0;   // fraction of half-precision sums inside the per-element bound
};

// `n` dot products of length k: row i of a (stream 0) with column i of b (stream 1).
Sums simulate(std::uint64_t seed, int k, int n) {
    const Tolerance tol = find_task("matmul_fast")->tolerance;
    const double u = unit_roundoff(DType::f32);
    const auto ka = rng_key(seed, 0), kb = rng_key(seed, 1);
    Sums s;
    for (int i = 0; i < n; ++i) {
        double exact = 0, m = 0;
        float acc = 0, acc_half = 0;
        for (int p = 0; p < k; ++p) {
            const float a = rng_value<float>(ka, std::uint64_t(i) * k + p, Distribution::signed_unit, 0);
            const float b = rng_value<float>(kb, std::uint64_t(p) * n + i, Distribution::signed_unit, 0);
            const double prod = static_cast<double>(a) * b;  // exact: two 24-bit significands
            exact += prod;
            m += std::fabs(prod);
            acc = std::fma(a, b, acc);
            acc_half += static_cast<float>(round_significand(static_cast<float>(prod), 11));
        }
        const double e_float = std::fabs(acc - exact) / (u * m), e_half = std::fabs(acc_half - exact) / (u * m);
        s.mean_e_float += e_float / n;
        s.mean_e_half += e_half / n;
        s.worst_e_float = std::max(s.worst_e_float, e_float);
        s.worst_relative_half = std::max(s.worst_relative_half, e_half * u);
        s.half_within_element += (e_half <= tolerance_growth(tol, k)) / static_cast<double>(n);
    }
    return s;
}

}  // namespace

TEST_CASE("matmuls use the sqrt(K) bound per element and the mean-error rule") {
    for (const char* id : {"matmul_naive", "matmul_tiled", "matmul_fast"}) {
        const Tolerance t = find_task(id)->tolerance;
        CHECK(t.model == ToleranceModel::sqrt_k);
        CHECK(t.c0 == 8);
        CHECK(t.mean_c == 12);
    }
    CHECK(find_task("dot")->tolerance.mean_c == 0);
    CHECK(find_task("add")->tolerance.mean_c == 0);
}

TEST_CASE("the mean-error limit is 12 plus 0.4 sqrt(K / N), and off where it does not apply") {
    const Tolerance t = find_task("matmul_fast")->tolerance;
    const double u = unit_roundoff(DType::f32);
    CHECK(mean_error_limit(t, 4096, 4096.0 * 4096, u) == doctest::Approx(12.0 + 0.4 / 64));
    CHECK(mean_error_limit(t, 1, 1, u) == doctest::Approx(12.4));
    CHECK(mean_error_limit(t, 4099, 1, u) == doctest::Approx(12 + 0.4 * std::sqrt(4099.0)));
    CHECK(mean_error_limit(t, 4096, 100, unit_roundoff(DType::i32)) == 0);  // integers compare exactly
    CHECK(mean_error_limit(find_task("dot")->tolerance, 1000, 1, u) == 0);
    CHECK(mean_error_from_ratio(t, 4096, 0.5) == doctest::Approx(0.5 * 8 * 64));
}

TEST_CASE("float32 sums pass both rules; half-precision products fail the mean rule, even where every element passes") {
    for (std::uint64_t seed : {1, 2, 3}) {
        for (int k : {64, 1024, 4096}) {
            const int n = 96;
            const Sums s = simulate(seed, k, n);
            const double limit = mean_error_limit(find_task("matmul_fast")->tolerance, k, n, unit_roundoff(DType::f32));
            INFO("seed " << seed << " K " << k << ": float " << s.mean_e_float << ", half " << s.mean_e_half
                         << ", limit " << limit);
            CHECK(s.mean_e_float < limit / 2.5);
            CHECK(s.mean_e_half > limit * 2.5);
            CHECK(s.worst_e_float < 8 * std::sqrt(static_cast<double>(k)) / 10);  // per element: a factor 10 to spare
            if (k == 4096) CHECK(s.half_within_element > 0.95);  // the per-element bound alone would miss it
            CHECK(s.worst_relative_half < coarse_relative_limit(k) / 4);  // reported as coarse arithmetic
        }
    }
}
