// Element types the harness knows, with the names used in JSON and on the CLI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

enum class DType { f32, f64, i32 };

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::f32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::f64; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::i32; };
template <typename T> constexpr DType dtype_of = DTypeOf<T>::value;

const char* dtype_name(DType t);         // "float32", "float64", "int32"
bool parse_dtype(const std::string& s, DType* out);  // also accepts "float", "double", "int"
std::size_t dtype_size(DType t);
bool dtype_is_integer(DType t);
// Unit roundoff u = 2^-p (half a unit in the last place of 1.0); 0 for integers.
double unit_roundoff(DType t);
// Smallest positive normal number of the type; the absolute floor of a tolerance.
double smallest_normal(DType t);

template <typename T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with the C++ type T behind `t`:
//   dispatch_dtype(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
    switch (t) {
        case DType::f32: return f(TypeTag<float>{});
        case DType::f64: return f(TypeTag<double>{});
        case DType::i32: break;
    }
    return f(TypeTag<std::int32_t>{});
}
