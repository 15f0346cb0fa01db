// The input generator. Element i of input stream s under seed S is a pure
// function of (S, s, i), so any element can be made on the CPU or the GPU, in
// any order, and data/generate.py reproduces it bit for bit in numpy.
//
//   mix(z)        = splitmix64's finalizer:  z += 0x9E3779B97F4A7C15
//                   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//                   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//                   mix = z ^ (z >> 31)                    (all mod 2^64)
//   bits(S, s, i) = mix(mix(S ^ mix(s)) + i)
//
// Distributions. Values are never zero, floats are exact in float32 (so the
// float32, float64 and int32 versions of a task see comparable data), and
// int32 magnitudes are at most 8, so an int32 matmul cannot overflow even at
// K = 2^24 (|c| <= 64 K).
//   Signed,   float: m = bits >> 40 (24 bits);  v = (2m + 1 - 2^24) / 2^24, in (-1, 1)
//   Positive, float: m = bits >> 41 (23 bits);  v = (2m + 1) / 2^24,       in (0, 1)
//   Signed,   int:   r = (bits >> 32) mod 16;   v = r - 8 if r < 8 else r - 7, in {-8..-1, 1..8}
//   Positive, int:   r = (bits >> 32) mod 8;    v = r + 1, in {1..8}
//
// Scale and shift. Each float stream also gets a scale and a shift drawn from
// its seed, so every grading run (a fresh seed) sees a different range and
// centre, and a kernel that relies on the inputs lying in (-1, 1) around 0
// fails. From the stream's draw bits d = bits(S, s, 2^64 - 1), an index no
// element uses:
//   e = ((d >> 32) mod 9) - 4                           in -4..4
//   Signed:   t = ((d >> 8) mod 256 - 128) / 512        in [-1/4, 1/4)
//   Positive: t = ((d >> 8) mod 128) / 512              in [0, 1/4): positive stays positive
//   x = float32(2^e (v + t))    (rounded to nearest even: exact in float32 again)
// v + t is never 0 (v is an odd multiple of 2^-24, t an even one). Both stay
// modest on purpose: with a mean far from 0 an honest float32 sum's error grows
// like sqrt(K) (tolerance.h's statistical rule leans on that staying small), and
// with |x| <= 20 products stay inside half precision's range, so a kernel
// computing in half is judged on its precision, not on an overflow.
// Integers get neither: their bound of 8 is what keeps a matmul from overflowing.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define HOST_DEVICE __host__ __device__
#else
#define HOST_DEVICE
#endif

enum class Distribution { signed_unit, positive_unit };

HOST_DEVICE inline std::uint64_t rng_mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

HOST_DEVICE inline std::uint64_t rng_key(std::uint64_t seed, std::uint64_t stream) {
    return rng_mix(seed ^ rng_mix(stream));
}

HOST_DEVICE inline std::uint64_t rng_bits(std::uint64_t key, std::uint64_t index) {
    return rng_mix(key + index);
}

HOST_DEVICE inline double rng_real(std::uint64_t bits, Distribution d) {
    if (d == Distribution::signed_unit) {
        const std::int64_t m = static_cast<std::int64_t>(bits >> 40);
        return static_cast<double>(2 * m + 1 - (std::int64_t(1) << 24)) / 16777216.0;
    }
    const std::int64_t m = static_cast<std::int64_t>(bits >> 41);
    return static_cast<double>(2 * m + 1) / 16777216.0;
}

HOST_DEVICE inline std::int32_t rng_int(std::uint64_t bits, Distribution d) {
    if (d == Distribution::signed_unit) {
        const std::int32_t r = static_cast<std::int32_t>((bits >> 32) % 16);
        return r < 8 ? r - 8 : r - 7;
    }
    return static_cast<std::int32_t>((bits >> 32) % 8) + 1;
}

// A float stream's scale 2^exponent and shift, fixed by its key (above).
struct StreamScale {
    int exponent = 0;
    double shift = 0;
};

HOST_DEVICE inline StreamScale rng_scale(std::uint64_t key, Distribution d) {
    const std::uint64_t draw = rng_bits(key, ~std::uint64_t(0));
    StreamScale s;
    s.exponent = static_cast<int>((draw >> 32) % 9) - 4;
    s.shift = d == Distribution::signed_unit ? (static_cast<double>((draw >> 8) % 256) - 128) / 512
                                             : static_cast<double>((draw >> 8) % 128) / 512;
    return s;
}

// v scaled and shifted, rounded to float32 (then widened again for float64).
HOST_DEVICE inline double rng_scaled(double v, StreamScale s) {
    return static_cast<double>(static_cast<float>(::ldexp(v + s.shift, s.exponent)));
}

// The value of element `index` for element type T.
template <typename T>
HOST_DEVICE inline T rng_value(std::uint64_t key, std::uint64_t index, Distribution d) {
    const std::uint64_t bits = rng_bits(key, index);
    if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(rng_int(bits, d));
    } else {
        return static_cast<T>(rng_scaled(rng_real(bits, d), rng_scale(key, d)));
    }
}
