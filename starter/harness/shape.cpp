#include "shape.h"

#include <climits>
#include <sstream>
#include <vector>

const char* shape_kind_name(ShapeKind k) {
    switch (k) {
        case ShapeKind::matrix: return "matrix";
        case ShapeKind::gemm: return "gemm";
        case ShapeKind::vector: return "vector";
    }
    return "?";
}

static int rank_of(ShapeKind k) { return k == ShapeKind::gemm ? 3 : k == ShapeKind::matrix ? 2 : 1; }

std::string Shape::str() const {
    std::string s = std::to_string(dims[0]);
    for (int i = 1; i < rank_of(kind); ++i) s += "x" + std::to_string(dims[i]);
    return s;
}

bool Shape::operator==(const Shape& o) const {
    return kind == o.kind && dims[0] == o.dims[0] && dims[1] == o.dims[1] && dims[2] == o.dims[2];
}

bool parse_shape(const std::string& text, ShapeKind kind, Shape* out, std::string* why) {
    static const char* forms[] = {"ROWSxCOLS, e.g. 17x33", "MxNxK, e.g. 17x33x29", "N, e.g. 1000"};
    const char* form = forms[kind == ShapeKind::matrix ? 0 : kind == ShapeKind::gemm ? 1 : 2];
    std::vector<std::int64_t> parts;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, 'x')) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 10) {
            *why = "'" + text + "' is not a " + shape_kind_name(kind) + " shape; expected " + form;
            return false;
        }
        const long long v = std::stoll(item);
        if (v < 1 || v > INT_MAX) {
            *why = "dimension " + item + " in '" + text + "' is out of range [1, 2147483647]";
            return false;
        }
        parts.push_back(v);
    }
    if (static_cast<int>(parts.size()) != rank_of(kind) || text.back() == 'x') {
        *why = "'" + text + "' is not a " + shape_kind_name(kind) + " shape; expected " + form;
        return false;
    }
    Shape s;
    s.kind = kind;
    for (std::size_t i = 0; i < parts.size(); ++i) s.dims[i] = parts[i];
    *out = s;
    return true;
}
