#include "dtype.h"

#include <cfloat>

const char* dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "float32";
        case DType::f64: return "float64";
        case DType::i32: return "int32";
    }
    return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
    if (s == "float32" || s == "float") *out = DType::f32;
    else if (s == "float64" || s == "double") *out = DType::f64;
    else if (s == "int32" || s == "int") *out = DType::i32;
    else return false;
    return true;
}

std::size_t dtype_size(DType t) { return t == DType::f64 ? 8 : 4; }

bool dtype_is_integer(DType t) { return t == DType::i32; }

double unit_roundoff(DType t) {
    switch (t) {
        case DType::f32: return FLT_EPSILON / 2;  // 2^-24
        case DType::f64: return DBL_EPSILON / 2;  // 2^-53
        case DType::i32: return 0;
    }
    return 0;
}

double smallest_normal(DType t) {
    switch (t) {
        case DType::f32: return FLT_MIN;
        case DType::f64: return DBL_MIN;
        case DType::i32: return 0;
    }
    return 0;
}
