// Shapes the student suite tests, shared by the tasks of one shape kind:
// 1 x 1, a single row and a single column, primes, sizes that are and are not
// multiples of 16/32/64/128 (48 x 80 is a multiple of 16 but not 32, 96 x 160
// of 32 but not 64, 192 x 320 of 64 but not 128: the bounds hint names the
// tile width from them), around 1000, and one large case.
#pragma once

#include <vector>

#include "../shape.h"

inline std::vector<Shape> matrix_test_shapes() {
    return {Shape::matrix(1, 1),    Shape::matrix(1, 257),    Shape::matrix(257, 1),
            Shape::matrix(17, 33),  Shape::matrix(33, 17),    Shape::matrix(31, 65),
            Shape::matrix(64, 64),  Shape::matrix(128, 256),  Shape::matrix(127, 129),
            Shape::matrix(48, 80),  Shape::matrix(96, 160),   Shape::matrix(192, 320),
            Shape::matrix(999, 1001), Shape::matrix(4096, 4096)};
}

inline std::vector<Shape> gemm_test_shapes() {
    return {Shape::gemm(1, 1, 1),       Shape::gemm(1, 300, 7),       Shape::gemm(300, 1, 5),
            Shape::gemm(1, 1, 4099),    Shape::gemm(17, 33, 29),      Shape::gemm(64, 64, 64),
            Shape::gemm(63, 65, 127),   Shape::gemm(128, 256, 96),    Shape::gemm(129, 257, 33),
            Shape::gemm(48, 80, 48),    Shape::gemm(96, 160, 96),     Shape::gemm(192, 320, 192),
            Shape::gemm(1000, 999, 1001), Shape::gemm(2048, 2048, 2048)};
}
