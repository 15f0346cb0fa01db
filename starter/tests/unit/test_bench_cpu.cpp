// The CPU side of make bench (starter/bench/): its three CPU matmuls, the
// check it runs on their results, and the rule that stops a sweep growing.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "../../bench/cpu_gemm.h"
#include "../../bench/sweep.h"
#include "counter_rng.h"
#include "registry.h"

namespace {

std::vector<float> random_matrix(std::size_t n, std::uint64_t stream) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = rng_value<float>(rng_key(7, stream), i, Distribution::signed_unit, 0);
    return v;
}

Tolerance matmul_tolerance() { return find_task("matmul_naive")->tolerance; }

}  // namespace

TEST_CASE("each CPU matmul computes a·b within the matmul tolerance, tile edges included") {
    // 1x1x1, shapes smaller than one tile, and shapes past the blocked version's
    // 64 x 128 x 256 tiles by one in each direction.
    const int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {17, 33, 29}, {65, 257, 129}, {64, 256, 128}, {3, 300, 1}};
    for (const CpuGemm& g : cpu_gemms())
        for (const auto& s : shapes) {
            const int m = s[0], n = s[1], k = s[2];
            const auto a = random_matrix(std::size_t(m) * k, 0), b = random_matrix(std::size_t(k) * n, 1);
            std::vector<float> c(std::size_t(m) * n, NAN);
            g.run(a.data(), b.data(), c.data(), m, n, k);
            CAPTURE(g.impl);
            CAPTURE(m);
            CAPTURE(n);
            CAPTURE(k);
            // Every element: more samples than elements checks them all.
            CHECK(check_gemm_samples(a.data(), b.data(), c.data(), m, n, k, matmul_tolerance(), m * n + 1) == "");
        }
}

TEST_CASE("the three CPU matmuls are named as bench.json's impl values") {
    std::vector<std::string> names;
    for (const CpuGemm& g : cpu_gemms()) names.push_back(g.impl);
    CHECK(names == std::vector<std::string>{"cpu-simple", "cpu-pretransposed", "cpu-blocked"});
}

TEST_CASE("the sampled check names the first wrong element it finds") {
    const int m = 40, n = 30, k = 20;
    const auto a = random_matrix(m * k, 0), b = random_matrix(k * n, 1);
    std::vector<float> c(m * n);
    cpu_gemm_blocked(a.data(), b.data(), c.data(), m, n, k);
    c[m * n - 1] += 0.5f;  // the last element is always among the samples
    CHECK(check_gemm_samples(a.data(), b.data(), c.data(), m, n, k, matmul_tolerance(), 16).rfind("c[39][29] = ", 0) == 0);
    c[m * n - 1] = NAN;
    CHECK(check_gemm_samples(a.data(), b.data(), c.data(), m, n, k, matmul_tolerance(), 16) != "");
}

TEST_CASE("the sampled check lands in many columns, not one") {
    // 256 x 256 with 256 samples: a stride of exactly n would check column 0 only.
    const int n = 256;
    const auto a = random_matrix(n * n, 0), b = random_matrix(n * n, 1);
    std::vector<float> c(n * n);
    cpu_gemm_blocked(a.data(), b.data(), c.data(), n, n, n);
    c[1 * n + 1] = 1e6f;  // row 1, column 1: found only if the samples move across columns
    CHECK(check_gemm_samples(a.data(), b.data(), c.data(), n, n, n, matmul_tolerance(), 256) != "");
}

TEST_CASE("the sweep's sizes: squares 256 to 8192, vectors 2^16 to 2^28; quick keeps the smallest") {
    const auto gemm = sweep_shapes(ShapeKind::gemm, false);
    REQUIRE(gemm.size() == 6);
    CHECK(gemm.front() == Shape::gemm(256, 256, 256));
    CHECK(gemm.back() == Shape::gemm(8192, 8192, 8192));
    CHECK(sweep_shapes(ShapeKind::matrix, false).back() == Shape::matrix(8192, 8192));
    const auto dot = sweep_shapes(ShapeKind::vector, false);
    REQUIRE(dot.size() == 7);
    CHECK(dot.front() == Shape::vector(1 << 16));
    CHECK(dot.back() == Shape::vector(1 << 28));
    CHECK(sweep_shapes(ShapeKind::gemm, true).size() == 3);
    CHECK(sweep_shapes(ShapeKind::vector, true).back() == Shape::vector(1 << 20));
    CHECK(shape_size(Shape::gemm(512, 512, 512)) == 512);
    CHECK(shape_size(Shape::vector(1000)) == 1000);
}

TEST_CASE("a size is skipped when the last run, scaled by the work, would pass the budget") {
    // A naive matmul at 23.4 ms for 4096^3 predicts 187 ms at 8192^3 (8x the flops).
    const MeasuredRun naive{4096, 23.4, 2.0 * 4096 * 4096 * 4096};
    const double next = 2.0 * 8192 * 8192 * 8192;
    const auto why = skip_reason(naive, next, 100, "--max-run-ms");
    REQUIRE(why);
    CHECK(*why == "skipped: one run would take about 187 ms (23.4 ms at 4096, 8x the work), over the bench's "
                  "100 ms per-run budget (--max-run-ms)");
    // A fast one (3.7 ms) is predicted at 29.6 ms: measured.
    CHECK_FALSE(skip_reason(MeasuredRun{4096, 3.7, naive.work}, next, 100, "--max-run-ms"));
    // Nothing measured yet: always run.
    CHECK_FALSE(skip_reason(std::nullopt, next, 100, "--max-run-ms"));
    // CPU budgets are seconds.
    CHECK(skip_reason(MeasuredRun{512, 900, 1}, 8, 2000, "--cpu-seconds")->find("about 7.2 s") != std::string::npos);
}
