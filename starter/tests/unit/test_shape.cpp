#include <doctest/doctest.h>

#include "shape.h"

TEST_CASE("shapes parse in the form of their kind") {
    Shape s;
    std::string why;
    REQUIRE(parse_shape("17x33x29", ShapeKind::gemm, &s, &why));
    CHECK(s.m() == 17);
    CHECK(s.n() == 33);
    CHECK(s.k() == 29);
    CHECK(s.str() == "17x33x29");
    REQUIRE(parse_shape("8192x1", ShapeKind::matrix, &s, &why));
    CHECK(s.rows() == 8192);
    CHECK(s.cols() == 1);
    REQUIRE(parse_shape("268435456", ShapeKind::vector, &s, &why));
    CHECK(s.n() == 268435456);
}

TEST_CASE("a malformed shape is refused with the form it should have") {
    Shape s;
    std::string why;
    CHECK_FALSE(parse_shape("17x33", ShapeKind::gemm, &s, &why));
    CHECK(why.find("MxNxK") != std::string::npos);
    for (const char* bad : {"", "x", "17x", "x17", "17xx3", "-1x3", "a", "17 x 3", "1.5x2"}) {
        INFO(bad);
        CHECK_FALSE(parse_shape(bad, ShapeKind::matrix, &s, &why));
    }
}

TEST_CASE("zero and out-of-range dimensions are refused") {
    Shape s;
    std::string why;
    CHECK_FALSE(parse_shape("0x5", ShapeKind::matrix, &s, &why));
    CHECK(why.find("out of range") != std::string::npos);
    CHECK_FALSE(parse_shape("3000000000", ShapeKind::vector, &s, &why));
}
