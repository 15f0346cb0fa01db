#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "stats.h"

TEST_CASE("summary statistics of a known sample") {
    const SampleStats s = summarize({5, 1, 4, 2, 3});
    CHECK(s.samples == 5);
    CHECK(s.median == 3);
    CHECK(s.min == 1);
    CHECK(s.mean == 3);
    CHECK(s.stddev == doctest::Approx(1.5811388));
}

TEST_CASE("the median of an even sample is the mean of the middle two") {
    CHECK(summarize({4, 1, 3, 2}).median == 2.5);
}

TEST_CASE("with few samples the median's interval is half the range") {
    CHECK(summarize({1, 2, 10}).ci95_half_width == 4.5);
}

TEST_CASE("the median's 95% interval narrows as samples accumulate") {
    std::mt19937 gen(1);
    std::normal_distribution<double> noise(10.0, 0.5);
    std::vector<double> small, large;
    for (int i = 0; i < 20; ++i) small.push_back(noise(gen));
    large = small;
    for (int i = 0; i < 2000; ++i) large.push_back(noise(gen));
    CHECK(summarize(large).ci95_half_width < summarize(small).ci95_half_width / 3);
}

TEST_CASE("the median's 95% interval covers the true median about 95% of the time") {
    std::mt19937 gen(2);
    std::exponential_distribution<double> skewed(1.0);  // true median ln 2
    int covered = 0;
    const int trials = 2000;
    for (int t = 0; t < trials; ++t) {
        std::vector<double> x(41);
        for (double& v : x) v = skewed(gen);
        const SampleStats s = summarize(x);
        covered += std::abs(s.median - std::log(2.0)) <= s.ci95_half_width;
    }
    CHECK(covered > 0.92 * trials);
}

TEST_CASE("a constant sample has no spread") {
    const SampleStats s = summarize(std::vector<double>(50, 2.0));
    CHECK(s.ci95_half_width == 0);
    CHECK(s.relative_ci() == 0);
}
