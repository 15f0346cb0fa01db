// CUDA's device math and bit intrinsics, computed on the CPU.
//
// Results match the GPU where CUDA defines them exactly (integer and bit
// functions, conversions with their rounding, saturation of out-of-range
// float-to-int). The fast-math approximations (__expf, __fdividef, rsqrtf,
// ...) return the correctly rounded value instead of the GPU's
// approximation: within the error bounds CUDA documents for them. The
// directed-rounding variants (_rz, _ru, _rd) of float arithmetic round to
// nearest like the _rn ones.
#pragma once

#include <math.h>

#include <climits>
#include <limits>
#include <cstdint>
#include <cstring>

#include "device_state.h"

namespace cudacpu {
namespace detail {

template <class To, class From>
inline To bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To out;
    std::memcpy(&out, &v, sizeof(To));
    return out;
}

// Float-to-integer conversion as the GPU does it: NaN gives 0, values out of
// range saturate.
template <class I, class F>
inline I saturate_to(F rounded) {
    if (rounded != rounded) return 0;
    if (rounded <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (rounded >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(rounded);
}

}  // namespace detail
}  // namespace cudacpu

// --- Reinterpreting bits ---------------------------------------------------------------
inline int __float_as_int(float x) { return ::cudacpu::detail::bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return ::cudacpu::detail::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return ::cudacpu::detail::bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return ::cudacpu::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return ::cudacpu::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return ::cudacpu::detail::bit_cast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(__double_as_longlong(x) & 0xffffffff); }
inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double(static_cast<long long>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                                                       static_cast<unsigned>(lo)));
}

// --- Conversions (rn: nearest even, rz: toward zero, ru: up, rd: down) -----------------
#define CUDACPU_FLOAT_TO_INT(F, suffix, I, name)                                                                  \
    inline I name##_rn(F x) { return ::cudacpu::detail::saturate_to<I>(nearbyint##suffix(x)); }                \
    inline I name##_rz(F x) { return ::cudacpu::detail::saturate_to<I>(trunc##suffix(x)); }                    \
    inline I name##_ru(F x) { return ::cudacpu::detail::saturate_to<I>(ceil##suffix(x)); }                     \
    inline I name##_rd(F x) { return ::cudacpu::detail::saturate_to<I>(floor##suffix(x)); }
CUDACPU_FLOAT_TO_INT(float, f, int, __float2int)
CUDACPU_FLOAT_TO_INT(float, f, unsigned int, __float2uint)
CUDACPU_FLOAT_TO_INT(float, f, long long, __float2ll)
CUDACPU_FLOAT_TO_INT(float, f, unsigned long long, __float2ull)
CUDACPU_FLOAT_TO_INT(double, , int, __double2int)
CUDACPU_FLOAT_TO_INT(double, , unsigned int, __double2uint)
CUDACPU_FLOAT_TO_INT(double, , long long, __double2ll)
CUDACPU_FLOAT_TO_INT(double, , unsigned long long, __double2ull)
#undef CUDACPU_FLOAT_TO_INT
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned int x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
inline float __ull2float_rn(unsigned long long x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return x; }
inline double __uint2double_rn(unsigned int x) { return x; }
inline double __ll2double_rn(long long x) { return static_cast<double>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline float __float2float_rn(float x) { return x; }

// --- Float arithmetic ------------------------------------------------------------------
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmaf_rz(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmaf_ru(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmaf_rd(float a, float b, float c) { return fmaf(a, b, c); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline void __sincosf(float x, float* s, float* c) {
    *s = sinf(x);
    *c = cosf(x);
}
inline float sinpif(float x) { return sinf(static_cast<float>(M_PI) * x); }
inline float cospif(float x) { return cosf(static_cast<float>(M_PI) * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline float rhypotf(float a, float b) { return 1.0f / hypotf(a, b); }
inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }

// --- Integer and bit functions ---------------------------------------------------------
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) | __brev(static_cast<unsigned>(x >> 32));
}
// Byte i of the result is byte (s >> 4i) & 7 of the eight bytes {y, x} (x is bytes 0-3).
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((v << (shift & 31)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((v << (shift < 32 ? shift : 32)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(v >> (shift & 31));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(v >> (shift < 32 ? shift : 32));
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((static_cast<__int128>(a) * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline int __mul24(int a, int b) {
    const auto low24 = [](int v) { return static_cast<int>(static_cast<unsigned>(v) << 8) >> 8; };
    return static_cast<int>(static_cast<long long>(low24(a)) * low24(b));
}
inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffff) * (b & 0xffffff); }
inline unsigned int __sad(int x, int y, unsigned int z) {
    return z + static_cast<unsigned>(x > y ? static_cast<long long>(x) - y : static_cast<long long>(y) - x);
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return z + (x > y ? x - y : y - x); }
inline int __hadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y) >> 1); }
inline int __rhadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) {
    return static_cast<unsigned>((static_cast<unsigned long long>(x) + y) >> 1);
}
inline unsigned int __urhadd(unsigned int x, unsigned int y) {
    return static_cast<unsigned>((static_cast<unsigned long long>(x) + y + 1) >> 1);
}

// --- min and max, with the overloads CUDA declares ----------------------------------------
#define CUDACPU_MINMAX(A, B, R)                                                               \
    inline R min(A a, B b) { return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); } \
    inline R max(A a, B b) { return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); }
CUDACPU_MINMAX(int, int, int)
CUDACPU_MINMAX(unsigned int, unsigned int, unsigned int)
CUDACPU_MINMAX(int, unsigned int, unsigned int)
CUDACPU_MINMAX(unsigned int, int, unsigned int)
CUDACPU_MINMAX(long, long, long)
CUDACPU_MINMAX(unsigned long, unsigned long, unsigned long)
CUDACPU_MINMAX(long, unsigned long, unsigned long)
CUDACPU_MINMAX(unsigned long, long, unsigned long)
CUDACPU_MINMAX(long long, long long, long long)
CUDACPU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
CUDACPU_MINMAX(long long, unsigned long long, unsigned long long)
CUDACPU_MINMAX(unsigned long long, long long, unsigned long long)
#undef CUDACPU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// --- Loads and stores with cache hints: plain accesses here ------------------------------
template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }
template <class T>
inline T __ldca(const T* p) { return *p; }
template <class T>
inline T __ldcs(const T* p) { return *p; }
template <class T>
inline T __ldlu(const T* p) { return *p; }
template <class T>
inline T __ldcv(const T* p) { return *p; }
template <class T>
inline void __stcg(T* p, T v) { *p = v; }
template <class T>
inline void __stcs(T* p, T v) { *p = v; }
template <class T>
inline void __stwb(T* p, T v) { *p = v; }
template <class T>
inline void __stwt(T* p, T v) { *p = v; }

// --- Time and traps ------------------------------------------------------------------------
namespace cudacpu {
namespace detail {
long long clock_ticks();
void sleep_nanoseconds(unsigned ns);
[[noreturn]] void trap(Site site);
}  // namespace detail
}  // namespace cudacpu
inline long long clock64() { return ::cudacpu::detail::clock_ticks(); }
inline void __nanosleep(unsigned int ns) { ::cudacpu::detail::sleep_nanoseconds(ns); }
#define __trap() ::cudacpu::detail::trap(CUDACPU_HERE)
#define __brkpt() ::cudacpu::detail::trap(CUDACPU_HERE)
