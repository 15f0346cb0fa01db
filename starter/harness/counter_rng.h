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
// Each element type gets inputs that use all of it, so a kernel that routes
// values through a narrower type fails: float64 inputs carry full 53-bit
// significands (a float64 tile stored as float loses 29 of them), and int32
// inputs are as large as the case allows without overflow (an int32 routed
// through float keeps only 24 bits). Values are never zero.
//   Signed,   float32: m = bits >> 40 (24 bits);  v = (2m + 1 - 2^24) / 2^24, in (-1, 1)
//   Positive, float32: m = bits >> 41 (23 bits);  v = (2m + 1) / 2^24,       in (0, 1)
//   Signed,   float64: m = bits >> 11 (53 bits);  v = (2m + 1 - 2^53) / 2^53
//   Positive, float64: m = bits >> 12 (52 bits);  v = (2m + 1) / 2^53
//   Signed,   int32:   r = (bits >> 32) mod 2B;   v = r - B if r < B else r - B + 1, in {-B..-1, 1..B}
//   Positive, int32:   r = (bits >> 32) mod B;    v = r + 1, in {1..B}
// where B, the case's integer bound, is the task's (registry.h, IntRange): the
// largest magnitude for which the task's result cannot overflow int32. An
// int32 value equal to the output poison (device_ops.h) is negated, so a
// correct output element never looks unwritten.
//
// Scale and shift. Each float stream also gets a scale and a shift drawn from
// its seed, so every grading run (a fresh seed) sees a different range and
// centre, and a kernel that relies on the inputs lying in (-1, 1) around 0
// fails. From the stream's draw bits d = bits(S, s, 2^64 - 1), an index no
// element uses:
//   e = ((d >> 32) mod 9) - 4                           in -4..4
//   Signed:   t = ((d >> 8) mod 256 - 128) / 512        in [-1/4, 1/4)
//   Positive: t = ((d >> 8) mod 128) / 512              in [0, 1/4): positive stays positive
//   float32:  x = float32(2^e (v + t))    (rounded to nearest even: exact in float32)
//   float64:  x = 2^e (v + t)             (in float64, rounded to nearest even)
// v + t is never 0 (v is an odd multiple of 2^-24 or 2^-53, t an even one). Both
// stay modest on purpose: with a mean far from 0 an honest sum's error grows
// like sqrt(K) (tolerance.h's statistical rule leans on that staying small), and
// with |x| <= 20 products stay inside half precision's range, so a kernel
// computing in half is judged on its precision, not on an overflow.
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

// The same with float64's 53 bits: 2m + 1 - 2^53 is exact in double (|.| < 2^53).
HOST_DEVICE inline double rng_real53(std::uint64_t bits, Distribution d) {
    if (d == Distribution::signed_unit) {
        const std::int64_t m = static_cast<std::int64_t>(bits >> 11);
        return static_cast<double>(2 * m + 1 - (std::int64_t(1) << 53)) / 9007199254740992.0;
    }
    const std::int64_t m = static_cast<std::int64_t>(bits >> 12);
    return static_cast<double>(2 * m + 1) / 9007199254740992.0;
}

// The output poison for int32 (device_ops.h's kPoisonI32), which no input takes.
constexpr std::int32_t kInputAvoidsI32 = -2147476563;

HOST_DEVICE inline std::int32_t rng_int(std::uint64_t bits, Distribution d, std::int64_t bound) {
    const std::uint64_t high = bits >> 32;
    std::int64_t v;
    if (d == Distribution::signed_unit) {
        const std::int64_t r = static_cast<std::int64_t>(high % static_cast<std::uint64_t>(2 * bound));
        v = r < bound ? r - bound : r - bound + 1;
    } else {
        v = static_cast<std::int64_t>(high % static_cast<std::uint64_t>(bound)) + 1;
    }
    return v == kInputAvoidsI32 ? -kInputAvoidsI32 : static_cast<std::int32_t>(v);
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

// v scaled and shifted, rounded to float32 (the float32 stream) or kept in float64.
HOST_DEVICE inline double rng_scaled(double v, StreamScale s) {
    return static_cast<double>(static_cast<float>(::ldexp(v + s.shift, s.exponent)));
}
HOST_DEVICE inline double rng_scaled64(double v, StreamScale s) { return ::ldexp(v + s.shift, s.exponent); }

// The value of element `index` for element type T; `int_bound` is B above (int32 only).
template <typename T>
HOST_DEVICE inline T rng_value(std::uint64_t key, std::uint64_t index, Distribution d, std::int64_t int_bound) {
    const std::uint64_t bits = rng_bits(key, index);
    if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(rng_int(bits, d, int_bound));
    } else if constexpr (sizeof(T) == 8) {
        return rng_scaled64(rng_real53(bits, d), rng_scale(key, d));
    } else {
        return static_cast<T>(rng_scaled(rng_real(bits, d), rng_scale(key, d)));
    }
}
