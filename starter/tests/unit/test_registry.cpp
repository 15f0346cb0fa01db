#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "registry.h"

TEST_CASE("the registry holds the seven tasks, in the order students meet them") {
    std::vector<std::string> ids;
    for (const Task& t : all_tasks()) ids.push_back(t.id);
    CHECK(ids == std::vector<std::string>{"fill", "add", "transpose", "matmul_naive", "matmul_tiled", "matmul_fast", "dot"});
}

TEST_CASE("every task is fully described") {
    for (const Task& t : all_tasks()) {
        INFO(t.id);
        CHECK(!t.summary.empty());
        CHECK(t.file == t.id + ".cu");
        CHECK(!t.dtypes.empty());
        for (const auto& [name, set] : named_shape_sets(t.shapes)) {
            INFO(name);
            CHECK(!set->empty());
            for (const Shape& s : *set) CHECK(s.kind == t.shape_kind);
        }
        CHECK(t.shapes.sanitize.size() == 1);
        CHECK(t.input_names.size() == t.input_elements(t.shapes.test[0]).size());
        CHECK(t.launch);
        CHECK(t.reference_host);
        CHECK(t.reference_device);
    }
}

TEST_CASE("make test runs every graded shape, and the sanitizer's case is small") {
    for (const Task& t : all_tasks()) {
        INFO(t.id);
        for (const Shape& s : t.shapes.graded)
            CHECK(std::find(t.shapes.test.begin(), t.shapes.test.end(), s) != t.shapes.test.end());
        const Shape& s = t.shapes.sanitize[0];
        CHECK(s.dims[0] * s.dims[1] * s.dims[2] < 100000);
    }
}

TEST_CASE("graded 2-D shapes need more than 65,535 blocks in grid.y when a launch puts a block row per matrix row") {
    for (const Task& t : all_tasks()) {
        if (t.shape_kind == ShapeKind::vector) continue;
        INFO(t.id);
        bool tall = false, wide = false;
        for (const Shape& s : t.shapes.graded) {
            tall |= s.dims[0] > 65535;
            wide |= s.dims[1] > 65535;
        }
        CHECK(tall);
        CHECK(wide);
    }
}

TEST_CASE("int32 inputs are as large as the task allows without overflow") {
    CHECK(int_bound(IntRange::full, 1) == 2147483647);
    CHECK(int_bound(IntRange::sum_of_two, 1) == 1073741823);
    for (double k : {1.0, 3.0, 13.0, 521.0, 1001.0, 4099.0, 1e6, 1e9}) {
        INFO(k);
        const std::int64_t b = int_bound(IntRange::products_of_k, k);
        CHECK(b >= 1);
        CHECK(static_cast<std::int64_t>(k) * b * b <= 2147483647);  // no overflow for any order of the sum
        if (k * (b + 1) * (b + 1) <= 2147483647.0) CHECK(false);    // and B is the largest such bound
    }
    CHECK(int_bound(IntRange::products_of_k, 1) == 46340);
}

TEST_CASE("every task's file exists in the starter and the solution") {
    for (const Task& t : all_tasks()) {
        INFO(t.file);
        CHECK(std::ifstream("kernels/" + t.file).good());
        CHECK(std::ifstream("../solution/kernels/" + t.file).good());
    }
}

TEST_CASE("the test shapes include the edge cases the suite promises") {
    for (const Task& t : all_tasks()) {
        INFO(t.id);
        bool one = false, row = false, col = false, odd = false, large = false;
        for (const Shape& s : t.shapes.test) {
            const auto n = s.kind == ShapeKind::vector ? s.n() : s.dims[0];
            one |= s.dims[0] == 1 && s.dims[1] == 1 && (s.kind != ShapeKind::gemm || s.k() == 1);
            row |= s.kind != ShapeKind::vector && s.dims[0] == 1 && s.dims[1] > 1;
            col |= s.kind != ShapeKind::vector && s.dims[0] > 1 && s.dims[1] == 1;
            odd |= n % 2 == 1 && n > 16;
            large |= (s.kind == ShapeKind::vector ? s.n() >= (1 << 24) : s.dims[0] >= 2048);
        }
        CHECK(one);
        if (t.shape_kind != ShapeKind::vector) {
            CHECK(row);
            CHECK(col);
        }
        CHECK(odd);
        CHECK(large);
    }
}

TEST_CASE("FLOP and byte counts follow the fewest-work formulas") {
    const Task& mm = *find_task("matmul_fast");
    CHECK(mm.flops(Shape::gemm(2, 3, 4)) == 48);
    CHECK(mm.min_bytes(Shape::gemm(2, 3, 4), DType::f32) == 4 * (8 + 12 + 6));
    CHECK(find_task("add")->min_bytes(Shape::matrix(10, 10), DType::i32) == 1200);
    CHECK(find_task("transpose")->min_bytes(Shape::matrix(10, 10), DType::f32) == 800);
    CHECK(find_task("fill")->min_bytes(Shape::matrix(10, 10), DType::i32) == 400);
    CHECK(find_task("dot")->min_bytes(Shape::vector(100), DType::f32) == 804);
}

TEST_CASE("an unknown task id is not found") {
    CHECK(find_task("matmul") == nullptr);
    CHECK(find_task("dot") != nullptr);
}
