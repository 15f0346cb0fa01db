// Problem shapes. A task has one kind of shape:
//   matrix  rows x cols        (fill, add, transpose)   written "17x33"
//   gemm    m x n x k          (matmul_*)               written "17x33x29"
//   vector  n                  (dot)                    written "1000"
#pragma once

#include <cstdint>
#include <string>

enum class ShapeKind { matrix, gemm, vector };

const char* shape_kind_name(ShapeKind k);  // "matrix", "gemm", "vector"

struct Shape {
    ShapeKind kind = ShapeKind::matrix;
    std::int64_t dims[3] = {1, 1, 1};  // matrix: rows, cols; gemm: m, n, k; vector: n

    static Shape matrix(std::int64_t rows, std::int64_t cols) { return {ShapeKind::matrix, {rows, cols, 1}}; }
    static Shape gemm(std::int64_t m, std::int64_t n, std::int64_t k) { return {ShapeKind::gemm, {m, n, k}}; }
    static Shape vector(std::int64_t n) { return {ShapeKind::vector, {n, 1, 1}}; }

    std::int64_t rows() const { return dims[0]; }
    std::int64_t cols() const { return dims[1]; }
    std::int64_t m() const { return dims[0]; }
    std::int64_t n() const { return kind == ShapeKind::gemm ? dims[1] : dims[0]; }
    std::int64_t k() const { return dims[2]; }

    std::string str() const;  // "17x33x29"
    bool operator==(const Shape& o) const;
};

// Parses "17x33" / "17x33x29" / "1000" for the given kind. Every dimension
// must be an integer in [1, 2^31 - 1]; on failure returns false and says why.
bool parse_shape(const std::string& text, ShapeKind kind, Shape* out, std::string* why);
