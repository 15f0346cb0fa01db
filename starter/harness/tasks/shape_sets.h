// Shapes the student suite tests, shared by the tasks of one shape kind:
// 1 x 1, a single row and a single column, primes, sizes that are and are not
// multiples of 16/32/64/128, around 1000, and one large case.
#pragma once

#include <vector>

#include "../shape.h"

inline std::vector<Shape> matrix_test_shapes() {
    return {Shape::matrix(1, 1),    Shape::matrix(1, 257),    Shape::matrix(257, 1),
            Shape::matrix(17, 33),  Shape::matrix(33, 17),    Shape::matrix(31, 65),
            Shape::matrix(64, 64),  Shape::matrix(128, 256),  Shape::matrix(127, 129),
            Shape::matrix(999, 1001), Shape::matrix(4096, 4096)};
}

inline std::vector<Shape> gemm_test_shapes() {
    return {Shape::gemm(1, 1, 1),       Shape::gemm(1, 300, 7),       Shape::gemm(300, 1, 5),
            Shape::gemm(1, 1, 4099),    Shape::gemm(17, 33, 29),      Shape::gemm(64, 64, 64),
            Shape::gemm(63, 65, 127),   Shape::gemm(128, 256, 96),    Shape::gemm(129, 257, 33),
            Shape::gemm(1000, 999, 1001), Shape::gemm(2048, 2048, 2048)};
}
