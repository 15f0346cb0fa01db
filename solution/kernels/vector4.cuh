// 16-byte vectors of four 4-byte elements, for the memory-bound solutions.
#pragma once

#include <cstdint>

template <typename T> struct Vector4;
template <> struct Vector4<float> { using type = float4; };
template <> struct Vector4<std::int32_t> { using type = int4; };

// Whether every pointer is 16-byte aligned (cudaMalloc gives 256).
template <typename... P>
__host__ __device__ bool aligned16(const P*... p) {
    return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}
