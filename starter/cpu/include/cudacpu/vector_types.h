// CUDA's built-in vector types (float2, int4, ...), uint3 and dim3, with the
// alignment each has on a GPU: a float4 load through a misaligned pointer
// fails here too, as it does there. Like CUDA's, they have no arithmetic
// operators, only members x, y, z, w and make_<type>() constructors.
#pragma once

#define CUDACPU_VECTOR_TYPES(T, N, A1, A2, A3, A4)                                          \
    struct alignas(A1) N##1 { T x; };                                                       \
    struct alignas(A2) N##2 { T x, y; };                                                    \
    struct alignas(A3) N##3 { T x, y, z; };                                                 \
    struct alignas(A4) N##4 { T x, y, z, w; };                                              \
    inline constexpr N##1 make_##N##1(T x) { return N##1{x}; }                              \
    inline constexpr N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                      \
    inline constexpr N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }              \
    inline constexpr N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }

CUDACPU_VECTOR_TYPES(signed char, char, 1, 2, 1, 4)
CUDACPU_VECTOR_TYPES(unsigned char, uchar, 1, 2, 1, 4)
CUDACPU_VECTOR_TYPES(short, short, 2, 4, 2, 8)
CUDACPU_VECTOR_TYPES(unsigned short, ushort, 2, 4, 2, 8)
CUDACPU_VECTOR_TYPES(int, int, 4, 8, 4, 16)
CUDACPU_VECTOR_TYPES(unsigned int, uint, 4, 8, 4, 16)
CUDACPU_VECTOR_TYPES(long, long, 8, 16, 8, 16)
CUDACPU_VECTOR_TYPES(unsigned long, ulong, 8, 16, 8, 16)
CUDACPU_VECTOR_TYPES(long long, longlong, 8, 16, 8, 16)
CUDACPU_VECTOR_TYPES(unsigned long long, ulonglong, 8, 16, 8, 16)
CUDACPU_VECTOR_TYPES(float, float, 4, 8, 4, 16)
CUDACPU_VECTOR_TYPES(double, double, 8, 16, 8, 16)
#undef CUDACPU_VECTOR_TYPES

// CUDA 13's explicitly aligned 4-vectors of 8-byte elements.
struct alignas(16) double4_16a { double x, y, z, w; };
struct alignas(32) double4_32a { double x, y, z, w; };
struct alignas(16) longlong4_16a { long long x, y, z, w; };
struct alignas(32) longlong4_32a { long long x, y, z, w; };
struct alignas(16) ulonglong4_16a { unsigned long long x, y, z, w; };
struct alignas(32) ulonglong4_32a { unsigned long long x, y, z, w; };

// The launch geometry: unspecified dimensions are 1.
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
