#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "counter_rng.h"
#include "data_dir.h"
#include "data_manifest.h"
#include "npy.h"

TEST_CASE("the generator is a pure function of seed, stream and index") {
    const auto key = rng_key(42, 1);
    CHECK(rng_value<float>(key, 7, Distribution::signed_unit) == rng_value<float>(rng_key(42, 1), 7, Distribution::signed_unit));
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

TEST_CASE("scaled float inputs are never zero, exact in float32, and positive ones stay positive") {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        const auto key = rng_key(seed, 1);
        const StreamScale s = rng_scale(key, Distribution::signed_unit), p = rng_scale(key, Distribution::positive_unit);
        for (std::uint64_t i = 0; i < 2000; ++i) {
            const double x = rng_value<double>(key, i, Distribution::signed_unit);
            REQUIRE(x != 0.0);
            REQUIRE(static_cast<double>(static_cast<float>(x)) == x);
            REQUIRE(static_cast<double>(rng_value<float>(key, i, Distribution::signed_unit)) == x);
            REQUIRE(std::fabs(x) <= std::ldexp(1.25, s.exponent));
            const double y = rng_value<double>(key, i, Distribution::positive_unit);
            REQUIRE(y > 0.0);
            REQUIRE(y < std::ldexp(1.25, p.exponent));
        }
    }
}

TEST_CASE("int inputs are small and never zero, so an int32 matmul cannot overflow") {
    std::set<int> seen_signed, seen_positive;
    const auto key = rng_key(7, 0);
    for (std::uint64_t i = 0; i < 10000; ++i) {
        seen_signed.insert(rng_value<std::int32_t>(key, i, Distribution::signed_unit));
        seen_positive.insert(rng_value<std::int32_t>(key, i, Distribution::positive_unit));
    }
    CHECK(seen_signed == std::set<int>{-8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(seen_positive == std::set<int>{1, 2, 3, 4, 5, 6, 7, 8});
    // |c| <= 64 K fits int32 far beyond K = 8192.
    CHECK(64LL * 8192 < 2147483647LL);
}

TEST_CASE("data/generate.py implements the same generator bit for bit") {
    int inputs_compared = 0;
    for (const ManifestCase& c : read_manifest(test_data_dir())) {
        for (std::size_t i = 0; i < c.task->input_names.size(); ++i) {
            const std::string path = test_data_dir() + "/" + c.dir + "/" + c.task->input_names[i] + ".npy";
            const std::vector<double> stored = read_npy(path).to_doubles();
            const auto key = rng_key(c.seed, i);
            for (std::size_t j = 0; j < stored.size(); ++j) {
                const double mine = c.dtype == DType::i32 ? rng_value<std::int32_t>(key, j, c.task->distribution)
                                                          : rng_value<double>(key, j, c.task->distribution);
                INFO(path << " element " << j);
                REQUIRE(mine == stored[j]);
            }
            ++inputs_compared;
        }
    }
    CHECK(inputs_compared > 20);
}
