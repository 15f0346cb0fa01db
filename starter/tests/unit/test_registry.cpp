#include <doctest/doctest.h>

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
        CHECK(!t.test_shapes.empty());
        CHECK(!t.bench_shapes.empty());
        CHECK(!t.data_shapes.empty());
        CHECK(t.input_names.size() == t.input_elements(t.test_shapes[0]).size());
        CHECK(t.launch);
        CHECK(t.reference_host);
        CHECK(t.reference_device);
        for (const auto* set : {&t.test_shapes, &t.bench_shapes, &t.data_shapes})
            for (const Shape& s : *set) CHECK(s.kind == t.shape_kind);
    }
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
        for (const Shape& s : t.test_shapes) {
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
