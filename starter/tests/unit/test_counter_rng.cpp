#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "counter_rng.h"
#include "data_dir.h"
#include "data_manifest.h"
#include "npy.h"
#include "registry.h"

TEST_CASE("the generator is a pure function of seed, stream and index") {
    const auto key = rng_key(42, 1);
    CHECK(rng_value<float>(key, 7, Distribution::signed_unit, 0) ==
          rng_value<float>(rng_key(42, 1), 7, Distribution::signed_unit, 0));
    CHECK(rng_bits(rng_key(42, 1), 7) != rng_bits(rng_key(42, 2), 7));
    CHECK(rng_bits(rng_key(42, 1), 7) != rng_bits(rng_key(43, 1), 7));
    CHECK(rng_bits(key, 7) != rng_bits(key, 8));
}

TEST_CASE("float inputs are never zero, lie in their interval and are exact in float32") {
    const auto key = rng_key(7, 0);
    for (std::uint64_t i = 0; i < 100000; ++i) {
        const double s = rng_real(rng_bits(key, i), Distribution::signed_unit);
        const double p = rng_real(rng_bits(key, i), Distribution::positive_unit);
        REQUIRE(s != 0.0);
        REQUIRE(std::fabs(s) < 1.0);
        REQUIRE(p > 0.0);
        REQUIRE(p < 1.0);
        REQUIRE(static_cast<double>(static_cast<float>(s)) == s);
        REQUIRE(static_cast<double>(static_cast<float>(p)) == p);
    }
}

TEST_CASE("each float stream gets a scale 2^e, e in -4..4, and a shift in [-1/4, 1/4), from its seed") {
    std::set<int> exponents;
    double lowest = 1, highest = -1;
    for (std::uint64_t seed = 0; seed < 2000; ++seed) {
        const StreamScale s = rng_scale(rng_key(seed, 0), Distribution::signed_unit);
        exponents.insert(s.exponent);
        lowest = std::min(lowest, s.shift);
        highest = std::max(highest, s.shift);
        REQUIRE(std::ldexp(s.shift, 9) == std::round(std::ldexp(s.shift, 9)));  // a multiple of 1/512
        const StreamScale p = rng_scale(rng_key(seed, 0), Distribution::positive_unit);
        REQUIRE(p.shift >= 0);
        REQUIRE(p.shift < 0.25);
    }
    CHECK(*exponents.begin() == -4);
    CHECK(*exponents.rbegin() == 4);
    CHECK(exponents.size() == 9);
    CHECK(lowest == -0.25);
    CHECK(highest == doctest::Approx(0.25 - 1.0 / 512));
    // Streams of one seed are scaled independently.
    int differ = 0;
    for (std::uint64_t seed = 0; seed < 100; ++seed)
        differ += rng_scale(rng_key(seed, 0), Distribution::signed_unit).exponent !=
                  rng_scale(rng_key(seed, 1), Distribution::signed_unit).exponent;
    CHECK(differ > 80);
}

TEST_CASE("scaled float32 inputs are never zero, exact in float32, and positive ones stay positive") {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        const auto key = rng_key(seed, 1);
        const StreamScale s = rng_scale(key, Distribution::signed_unit), p = rng_scale(key, Distribution::positive_unit);
        for (std::uint64_t i = 0; i < 2000; ++i) {
            const float x = rng_value<float>(key, i, Distribution::signed_unit, 0);
            REQUIRE(x != 0.0f);
            REQUIRE(std::fabs(x) <= std::ldexp(1.25, s.exponent));
            const float y = rng_value<float>(key, i, Distribution::positive_unit, 0);
            REQUIRE(y > 0.0f);
            REQUIRE(y < std::ldexp(1.25, p.exponent));
        }
    }
}

// The number of significant bits of x: 53 minus the trailing zeros of its significand.
static int significant_bits(double x) {
    int exponent;
    double m = std::fabs(std::frexp(x, &exponent));  // in [0.5, 1)
    int bits = 0;
    while (m != 0) {
        m = m * 2 - std::floor(m * 2);
        ++bits;
    }
    return bits;
}

TEST_CASE("float64 inputs use the whole 53-bit significand, so storing one as float32 changes it") {
    int full = 0, changed_by_float = 0, n = 0;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        const auto key = rng_key(seed, 0);
        const StreamScale s = rng_scale(key, Distribution::signed_unit);
        for (std::uint64_t i = 0; i < 1000; ++i, ++n) {
            const double x = rng_value<double>(key, i, Distribution::signed_unit, 0);
            REQUIRE(x != 0.0);
            REQUIRE(std::fabs(x) <= std::ldexp(1.25, s.exponent));
            full += significant_bits(x) >= 50;
            changed_by_float += static_cast<double>(static_cast<float>(x)) != x;
            const double y = rng_value<double>(key, i, Distribution::positive_unit, 0);
            REQUIRE(y > 0.0);
        }
    }
    CHECK(changed_by_float == n);
    CHECK(full > n * 9 / 10);
}

TEST_CASE("int32 inputs fill the task's bound, are never zero and never the output poison") {
    const auto key = rng_key(7, 0);
    for (std::int64_t bound : {std::int64_t(1), std::int64_t(8), std::int64_t(46340), std::int64_t(1073741823),
                               std::int64_t(2147483647)}) {
        INFO(bound);
        std::int64_t lowest = 0, highest = 0;
        bool above_float_exact = false;
        for (std::uint64_t i = 0; i < 20000; ++i) {
            const std::int64_t v = rng_value<std::int32_t>(key, i, Distribution::signed_unit, bound);
            REQUIRE(v != 0);
            REQUIRE(v != kInputAvoidsI32);
            REQUIRE(std::llabs(v) <= bound);
            lowest = std::min(lowest, v);
            highest = std::max(highest, v);
            above_float_exact |= std::llabs(v) > (1 << 24);
            const std::int64_t p = rng_value<std::int32_t>(key, i, Distribution::positive_unit, bound);
            REQUIRE(p >= 1);
            REQUIRE(p <= bound);
        }
        CHECK(static_cast<double>(lowest) == doctest::Approx(-static_cast<double>(bound)).epsilon(0.01));
        CHECK(static_cast<double>(highest) == doctest::Approx(static_cast<double>(bound)).epsilon(0.01));
        if (bound > (1 << 25)) CHECK(above_float_exact);  // such values do not survive a trip through float
    }
}

TEST_CASE("int32 matmul inputs at the task's bound cannot overflow the result") {
    const Task& mm = *find_task("matmul_tiled");
    for (const Shape& s : mm.shapes.test) {
        INFO(s.str());
        const std::int64_t b = int_bound(mm, s);
        CHECK(s.k() * b * b <= 2147483647);
    }
}

TEST_CASE("data/generate.py implements the same generator bit for bit") {
    int inputs_compared = 0;
    for (const ManifestCase& c : read_manifest(test_data_dir())) {
        for (std::size_t i = 0; i < c.task->input_names.size(); ++i) {
            const std::string path = test_data_dir() + "/" + c.dir + "/" + c.task->input_names[i] + ".npy";
            const std::vector<double> stored = read_npy(path).to_doubles();
            const auto key = rng_key(c.seed, i);
            for (std::size_t j = 0; j < stored.size(); ++j) {
                const std::int64_t bound = int_bound(*c.task, c.shape);
                const double mine = c.dtype == DType::i32 ? rng_value<std::int32_t>(key, j, c.task->distribution, bound)
                                    : c.dtype == DType::f64 ? rng_value<double>(key, j, c.task->distribution, bound)
                                                            : rng_value<float>(key, j, c.task->distribution, bound);
                INFO(path << " element " << j);
                REQUIRE(mine == stored[j]);
            }
            ++inputs_compared;
        }
    }
    CHECK(inputs_compared > 20);
}
