// The shapes each kind of task is checked, timed and stored on. Every shape
// list of the assignment is written here or in a task's file, nowhere else:
// the rubric names the sets, and everything else reads them from the registry.
//
// graded (the grader's correctness cases): 1 x 1, a single row and a single
// column, primes, sizes around 1000 that are no multiple of any tile width, a
// large case, and 70000 x 3 / 3 x 70000, which need more than 65,535 blocks in
// grid.y or grid.x when a launch puts one block (or one block row) per matrix
// row or column: the limit for y is 65,535, so such a launch fails there.
// test (make test) adds shapes that are and are not multiples of 16/32/64/128
// (48 x 80 is a multiple of 16 but not 32, 96 x 160 of 32 but not 64,
// 192 x 320 of 64 but not 128): which of them fail names the tile width whose
// edge is wrong (diagnose.h's pattern hint).
#pragma once

#include <algorithm>
#include <vector>

#include "../registry.h"

// `graded` then `extra`, without repeats, smallest first (a suite that stops at
// a hang or a crash has run the quick cases by then).
inline std::vector<Shape> graded_and(std::vector<Shape> graded, const std::vector<Shape>& extra) {
    for (const Shape& s : extra)
        if (std::find(graded.begin(), graded.end(), s) == graded.end()) graded.push_back(s);
    auto work = [](const Shape& s) { return double(s.dims[0]) * double(s.dims[1]) * double(s.dims[2]); };
    std::stable_sort(graded.begin(), graded.end(), [&](const Shape& a, const Shape& b) { return work(a) < work(b); });
    return graded;
}

// make bench's sweep: squares (cubes for matmuls) doubling from 256 to 8192, and
// vectors of 2^16 to 2^28 elements, four times longer at each step.
inline std::vector<Shape> sweep_shapes_of(ShapeKind kind) {
    std::vector<Shape> shapes;
    if (kind == ShapeKind::vector) {
        for (int p = 16; p <= 28; p += 2) shapes.push_back(Shape::vector(std::int64_t(1) << p));
        return shapes;
    }
    for (std::int64_t n = 256; n <= 8192; n *= 2)
        shapes.push_back(kind == ShapeKind::gemm ? Shape::gemm(n, n, n) : Shape::matrix(n, n));
    return shapes;
}

inline std::vector<Shape> matrix_graded_shapes() {
    return {Shape::matrix(1, 1),     Shape::matrix(1, 1000),     Shape::matrix(1000, 1),
            Shape::matrix(37, 211),  Shape::matrix(211, 37),     Shape::matrix(1031, 977),
            Shape::matrix(2048, 2048), Shape::matrix(70000, 3),  Shape::matrix(3, 70000)};
}

inline std::vector<Shape> matrix_test_shapes() {
    return graded_and(matrix_graded_shapes(),
                      {Shape::matrix(1, 257), Shape::matrix(257, 1), Shape::matrix(17, 33), Shape::matrix(33, 17),
                       Shape::matrix(31, 65), Shape::matrix(64, 64), Shape::matrix(128, 256), Shape::matrix(127, 129),
                       Shape::matrix(48, 80), Shape::matrix(96, 160), Shape::matrix(192, 320),
                       Shape::matrix(999, 1001), Shape::matrix(4096, 4096)});
}

// The matmuls' graded shapes grow with the generation: the tiled kernel must
// also be right at 1024^3, the fast one at shapes no tile size divides.
inline ShapeSets matrix_shape_sets() {
    ShapeSets s;
    s.graded = matrix_graded_shapes();
    s.test = matrix_test_shapes();
    s.timed = {Shape::matrix(8192, 8192)};
    s.sanitize = {Shape::matrix(37, 211)};
    // Multiples of every tile width: the counters speak of the kernel's pattern, not of its edges.
    s.profile = {Shape::matrix(1024, 1024)};
    s.sweep = sweep_shapes_of(ShapeKind::matrix);
    s.data = {Shape::matrix(3, 5), Shape::matrix(17, 33)};
    return s;
}

inline std::vector<Shape> gemm_graded_shapes(const std::vector<Shape>& more) {
    std::vector<Shape> shapes = {Shape::gemm(1, 1, 1),      Shape::gemm(1, 257, 13),    Shape::gemm(257, 1, 13),
                                 Shape::gemm(37, 41, 43),   Shape::gemm(96, 160, 96),   Shape::gemm(515, 509, 521),
                                 Shape::gemm(70000, 5, 3),  Shape::gemm(5, 70000, 3)};
    shapes.insert(shapes.end(), more.begin(), more.end());
    return shapes;
}

inline std::vector<Shape> gemm_test_shapes(const std::vector<Shape>& graded) {
    return graded_and(graded, {Shape::gemm(1, 300, 7), Shape::gemm(300, 1, 5), Shape::gemm(1, 1, 4099),
                               Shape::gemm(17, 33, 29), Shape::gemm(64, 64, 64), Shape::gemm(63, 65, 127),
                               Shape::gemm(128, 256, 96), Shape::gemm(129, 257, 33), Shape::gemm(48, 80, 48),
                               Shape::gemm(192, 320, 192), Shape::gemm(1000, 999, 1001),
                               Shape::gemm(2048, 2048, 2048)});
}
