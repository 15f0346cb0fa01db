#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include "diagnose.h"

namespace {

CheckResult wrong(std::size_t elements, std::size_t n_wrong) {
    CheckResult c;
    c.elements = elements;
    c.wrong = n_wrong;
    c.runs_checked = 1;
    c.has_first_wrong = true;
    c.first_row = 16;
    c.first_col = 0;
    c.expected = 1.25;
    c.got = 0.75;
    c.bound = 3.8e-6;
    return c;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a failure names how many elements are wrong and the first one") {
    const std::string s = describe_failure(wrong(561, 12), Shape::gemm(17, 33, 29));
    CHECK(s == "12 of 561 elements are wrong; the first is at (row 16, col 0): expected 1.25, got 0.75 "
               "(allowed error 3.8e-06)");
}

TEST_CASE("an element never written says so instead of printing the poison") {
    CheckResult c = wrong(10, 1);
    c.first_unwritten = true;
    CHECK(contains(describe_failure(c, Shape::matrix(2, 5)), "got nothing (never written)"));
}

TEST_CASE("unwritten elements hint at the grid size") {
    CheckResult c = wrong(1000, 40);
    c.unwritten = 40;
    const std::string h = case_hint(c, {20, 50}, Shape::matrix(20, 50));
    CHECK(contains(h, "40 elements were never written"));
    CHECK(contains(h, "Round the number of blocks up"));
}

TEST_CASE("a scalar result never written hints at initializing it") {
    CheckResult c = wrong(1, 1);
    c.unwritten = 1;
    CHECK(contains(case_hint(c, {1, 1}, Shape::vector(1000)), "set it"));
}

TEST_CASE("a 1 x 1 matrix never written gets the grid hint, not the reduction's") {
    CheckResult c = wrong(1, 1);
    c.unwritten = 1;
    c.first_row = 0;
    const std::string h = case_hint(c, {1, 1}, Shape::matrix(1, 1));
    CHECK(contains(h, "1 element was never written (it still holds"));
    CHECK(contains(describe_failure(c, Shape::matrix(1, 1)), "1 of 1 element is wrong; the first is at (row 0, col 0)"));
}

TEST_CASE("a dimension smaller than the tile has no partial tile to blame") {
    CheckResult c = wrong(300, 172);
    for (auto& e : c.wrong_in_edge) e = 0;
    CHECK_FALSE(contains(case_hint(c, {1, 300}, Shape::gemm(1, 300, 7)), "partial"));
}

TEST_CASE("a reduction that comes out low hints at lost updates") {
    CheckResult c = wrong(1, 1);
    c.expected = 256.7;
    c.got = 62.2;
    const std::string h = case_hint(c, {1, 1}, Shape::vector(1000));
    CHECK(contains(h, "only 24% of the expected sum"));
    CHECK(contains(h, "race"));
}

TEST_CASE("a sum a little off says it was accumulated in lower precision, not that updates were lost") {
    CheckResult c = wrong(1, 1);
    c.type = "float32";
    c.expected = 4194304.0;
    c.got = 4194000.0;  // 99.99%: one float accumulator over 2^24 terms
    const std::string h = case_hint(c, {1, 1}, Shape::vector(1 << 24));
    CHECK(contains(h, "accumulated in lower precision"));
    CHECK_FALSE(contains(h, "% of the expected sum"));
}

TEST_CASE("int32 results a little off where they are large say the values went through float") {
    CheckResult c = wrong(1000, 400);
    c.type = "int32";
    c.expected = 1073741825.0;
    c.got = 1073741824.0;  // float(2^30 + 1)
    const std::string h = case_hint(c, {1, 1000}, Shape::matrix(1, 1000));
    CHECK(contains(h, "the int32 values went through float"));
    c.expected = 1000.0;  // small values are exact in float: a wrong one there is some other bug
    c.got = 999.0;
    CHECK_FALSE(contains(case_hint(c, {1, 1000}, Shape::matrix(1, 1000)), "through float"));
}

TEST_CASE("wrong elements confined to the last partial tile hint at bounds checks") {
    CheckResult c = wrong(1000 * 1000, 5000);
    c.wrong_in_edge[0] = 4000;  // 16: not all
    c.wrong_in_edge[1] = 5000;  // 32: all of them
    c.wrong_in_edge[2] = 5000;
    c.wrong_in_edge[3] = 5000;
    const std::string h = case_hint(c, {1000, 1000}, Shape::gemm(1000, 1000, 1000));
    CHECK(contains(h, "last, partial 32-wide tile"));
    CHECK(contains(h, "rows >= 992 or columns >= 992"));
}

TEST_CASE("an output equal to the transposed answer hints at swapped indices") {
    CheckResult c = wrong(64 * 64, 64 * 63);
    c.matches_transposed = 64 * 64;
    CHECK(contains(case_hint(c, {64, 64}, Shape::gemm(64, 64, 64)), "transpose of the right answer"));
}

TEST_CASE("results that change between runs hint at a race") {
    CheckResult c;
    c.elements = 100;
    c.runs_checked = 2;
    c.runs_wrong = 1;
    c.first_bad_run = 1;
    CHECK(contains(case_hint(c, {10, 10}, Shape::matrix(10, 10)), "race"));
    CHECK(contains(describe_failure(c, Shape::matrix(10, 10)), "run 2 of 2 gave a wrong result"));
}

TEST_CASE("a modified input is reported first, by the name the task gives it") {
    CheckResult c;
    c.elements = 100;
    c.runs_checked = 1;
    c.modified_inputs = {"a"};
    CHECK(describe_failure(c, Shape::matrix(10, 10)) == "your kernel changed its input matrix A: inputs must be left unchanged");
    CHECK(contains(case_hint(c, {10, 10}, Shape::matrix(10, 10)), "read-only"));
    c.modified_inputs = {"a", "b"};
    CHECK(contains(describe_failure(c, Shape::gemm(10, 10, 4)), "changed its input matrices A and B"));
    c.modified_inputs = {"y"};
    CHECK(contains(describe_failure(c, Shape::vector(1000)), "changed its input vector y"));
    c.modified_inputs = {"in"};
    CHECK(contains(describe_failure(c, Shape::matrix(10, 10)), "changed its input matrix 'in'"));
}

TEST_CASE("a modified input is still named when the output is wrong as well") {
    CheckResult c = wrong(100, 3);
    c.modified_inputs = {"b"};
    const std::string s = describe_failure(c, Shape::gemm(10, 10, 4));
    CHECK(contains(s, "3 of 100 elements are wrong"));
    CHECK(contains(s, "your kernel also changed its input matrix B"));
}

namespace {

CheckResult coarse(std::size_t wrong_elements) {
    CheckResult c = wrong(4096, wrong_elements);
    c.has_first_wrong = wrong_elements > 0;
    c.mean_error = 56.4;
    c.mean_error_limit = 12.006;
    c.coarse_limit = 1.0 / 32 / 64;  // K = 4096
    c.worst_relative = 3e-4;
    return c;
}

}  // namespace

TEST_CASE("results only as accurate as half precision say so, in the message and the hint") {
    const CheckResult c = coarse(0);
    CHECK(c.coarse_arithmetic());
    CHECK_FALSE(c.passed());
    const std::string s = describe_failure(c, Shape::gemm(64, 64, 4096));
    CHECK(s == "the results are far less accurate than float32 arithmetic gives: the average error is 56 units of "
               "float32 rounding, where float32 stays below 12 (half precision, bfloat16 and TF32 tensor cores give "
               "errors like this)");
    CHECK(contains(case_hint(c, {64, 64}, Shape::gemm(64, 64, 4096)), "plain float32 arithmetic"));
}

TEST_CASE("elements outside the bound with a coarse average: the precision is named, and the first element") {
    const std::string s = describe_failure(coarse(12), Shape::gemm(64, 64, 4096));
    CHECK(contains(s, "far less accurate than float32 arithmetic gives: the average error is 56"));
    CHECK(contains(s, "; the first is at (row 16, col 0): expected 1.25, got 0.75"));
}

TEST_CASE("elements outside the bound, each by a little, at a small K: still coarse arithmetic") {
    CheckResult c = coarse(1);
    c.mean_error = 5;  // within the mean rule: the per-element bound (2K at K = 1) caught it
    c.coarse_limit = 1.0 / 32;
    CHECK(contains(describe_failure(c, Shape::gemm(1, 1, 1)),
                   "far less accurate than float32 arithmetic gives: 1 element is off by more than float32 rounding "
                   "allows, each by a little"));
}

TEST_CASE("a timed run that is only coarse says so, not that an earlier run was right") {
    CheckResult c = coarse(0);
    c.runs_wrong = 1;
    c.first_bad_run = 4;
    c.runs_checked = 5;
    CHECK(contains(describe_failure(c, Shape::gemm(64, 64, 4096)), "far less accurate"));
}

TEST_CASE("a float64 result as coarse as float32 blames float, not half precision") {
    CheckResult c = coarse(0);
    c.type = "float64";
    const std::string s = describe_failure(c, Shape::gemm(64, 64, 4096));
    CHECK(contains(s, "float32 arithmetic gives errors like this: a float tile, accumulator or temporary"));
    CHECK_FALSE(contains(s, "half"));
    const std::string h = case_hint(c, {64, 64}, Shape::gemm(64, 64, 4096));
    CHECK(contains(h, "keeps values in float"));
    CHECK_FALSE(contains(h, "tensor cores"));
}

TEST_CASE("large errors are a wrong result, not a precision problem") {
    CheckResult c = coarse(4096);
    c.worst_relative = 0.5;  // an element off by half its magnitude: an indexing bug
    CHECK(c.too_inaccurate());
    CHECK_FALSE(c.coarse_arithmetic());
    CHECK_FALSE(contains(describe_failure(c, Shape::gemm(64, 64, 64)), "accurate"));
    CHECK_FALSE(contains(case_hint(c, {64, 64}, Shape::gemm(64, 64, 64)), "float32 arithmetic"));
}

TEST_CASE("a mean error within its limit passes") {
    CheckResult c = coarse(0);
    c.mean_error = 2.6;
    CHECK(c.passed());
    c.mean_error_limit = 0;  // no such rule for the task
    c.mean_error = 1e9;
    CHECK(c.passed());
}

TEST_CASE("a fully wrong output hints at the index formula") {
    CHECK(contains(case_hint(wrong(100, 100), {10, 10}, Shape::matrix(10, 10)), "index formula"));
}

TEST_CASE("failing only on sizes that are not tile multiples names the tile width") {
    const std::vector<ShapeOutcome> outcomes = {
        {Shape::gemm(1, 1, 1), false},       {Shape::gemm(17, 33, 29), false}, {Shape::gemm(64, 64, 64), true},
        {Shape::gemm(128, 256, 96), true},   {Shape::gemm(48, 48, 48), false},  // multiple of 16, not of 32
        {Shape::gemm(2048, 2048, 2048), true}};
    CHECK(contains(tile_pattern_hint(outcomes), "not a multiple of 32 failed"));
}

TEST_CASE("no tile hint when a tile-multiple shape fails too, or nothing fails") {
    CHECK(tile_pattern_hint({{Shape::gemm(64, 64, 64), false}, {Shape::gemm(17, 33, 29), false}}).empty());
    CHECK(tile_pattern_hint({{Shape::gemm(64, 64, 64), true}, {Shape::gemm(17, 33, 29), true}}).empty());
}

TEST_CASE("numbers print the way a student reads them") {
    CHECK(format_number(42) == "42");
    CHECK(format_number(-3) == "-3");
    CHECK(format_number(0.1) == "0.1");
    CHECK(format_number(1.0 / 3) == "0.333333");
    CHECK(format_number(std::nan("")) == "NaN");
}

TEST_CASE("a launch refused for a grid over the limits names the limit, and the long dimension when there is one") {
    const std::string tall = cuda_error_hint(cudaErrorInvalidValue, "fill", Shape::matrix(70000, 3));
    CHECK(contains(tall, "grid.y and grid.z at most 65,535 blocks"));
    CHECK(contains(tall, "This shape has 70000 rows or columns: put the long dimension in grid.x"));
    CHECK(cuda_error_hint(cudaErrorInvalidValue, "fill", Shape::matrix(64, 64)) == "");  // some other bad value
    CHECK(contains(cuda_error_hint(cudaErrorInvalidConfiguration, "add", Shape::matrix(64, 64)), "at most 1,024"));
    CHECK(contains(cuda_error_hint(cudaErrorIllegalAddress, "add", Shape::matrix(64, 64)), "make memcheck TASK=add"));
}
