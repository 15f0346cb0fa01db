// CUDA's atomic functions on host memory. Blocks run on several worker
// threads at once, so these are real atomic read-modify-writes; each returns
// the old value, as CUDA's do. Float and double additions are
// compare-and-swap loops. The _block and _system variants are the same
// operations (one process, one address space).
#pragma once

#include <cstring>

namespace cudacpu {
namespace detail {

template <class T>
inline T atomic_load(T* p) {
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

// Replaces *p by f(*p) atomically; returns the old value. Works on the bit
// pattern, so it serves float and double as well as integers.
template <class T, class Bits, class F>
inline T atomic_update(T* p, F f) {
    static_assert(sizeof(T) == sizeof(Bits), "bit pattern of the same size");
    Bits* bits = reinterpret_cast<Bits*>(p);
    Bits old_bits = __atomic_load_n(bits, __ATOMIC_RELAXED);
    while (true) {
        T old;
        std::memcpy(&old, &old_bits, sizeof(T));
        const T updated = f(old);
        Bits new_bits;
        std::memcpy(&new_bits, &updated, sizeof(T));
        if (__atomic_compare_exchange_n(bits, &old_bits, new_bits, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
    }
}

}  // namespace detail
}  // namespace cudacpu

#define CUDACPU_ATOMIC_INT(T)                                                                                        \
    inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }                           \
    inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }                           \
    inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }                             \
    inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }                           \
    inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }                         \
    inline T atomicMin(T* a, T v) {                                                                                \
        return ::cudacpu::detail::atomic_update<T, T>(a, [v](T old) { return v < old ? v : old; });                \
    }                                                                                                              \
    inline T atomicMax(T* a, T v) {                                                                                \
        return ::cudacpu::detail::atomic_update<T, T>(a, [v](T old) { return v > old ? v : old; });                \
    }                                                                                                              \
    inline T atomicCAS(T* a, T compare, T v) {                                                                     \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                    \
        return compare;                                                                                            \
    }

CUDACPU_ATOMIC_INT(int)
CUDACPU_ATOMIC_INT(unsigned int)
CUDACPU_ATOMIC_INT(unsigned long long)
#undef CUDACPU_ATOMIC_INT

inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }
inline long long atomicMin(long long* a, long long v) {
    return ::cudacpu::detail::atomic_update<long long, long long>(a, [v](long long old) { return v < old ? v : old; });
}
inline long long atomicMax(long long* a, long long v) {
    return ::cudacpu::detail::atomic_update<long long, long long>(a, [v](long long old) { return v > old ? v : old; });
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
// ((old >= limit) ? 0 : old + 1) and (((old == 0) | (old > limit)) ? limit : old - 1), as in CUDA.
inline unsigned int atomicInc(unsigned int* a, unsigned int limit) {
    return ::cudacpu::detail::atomic_update<unsigned, unsigned>(a, [limit](unsigned old) { return old >= limit ? 0u : old + 1; });
}
inline unsigned int atomicDec(unsigned int* a, unsigned int limit) {
    return ::cudacpu::detail::atomic_update<unsigned, unsigned>(
        a, [limit](unsigned old) { return (old == 0 || old > limit) ? limit : old - 1; });
}
inline float atomicAdd(float* a, float v) {
    return ::cudacpu::detail::atomic_update<float, unsigned>(a, [v](float old) { return old + v; });
}
inline double atomicAdd(double* a, double v) {
    return ::cudacpu::detail::atomic_update<double, unsigned long long>(a, [v](double old) { return old + v; });
}
inline float atomicExch(float* a, float v) {
    return ::cudacpu::detail::atomic_update<float, unsigned>(a, [v](float) { return v; });
}
// sm_90's vector additions: each component is added atomically (CUDA makes
// no promise about the vector as a whole either).
inline float2 atomicAdd(float2* a, float2 v) { return make_float2(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y)); }
inline float4 atomicAdd(float4* a, float4 v) {
    return make_float4(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y), atomicAdd(&a->z, v.z), atomicAdd(&a->w, v.w));
}

// The scoped variants: one address space, so the same operations.
#define CUDACPU_SCOPED(name)                                                         \
    template <class... A>                                                            \
    inline auto name##_block(A... a) -> decltype(name(a...)) { return name(a...); } \
    template <class... A>                                                            \
    inline auto name##_system(A... a) -> decltype(name(a...)) { return name(a...); }
CUDACPU_SCOPED(atomicAdd)
CUDACPU_SCOPED(atomicSub)
CUDACPU_SCOPED(atomicExch)
CUDACPU_SCOPED(atomicMin)
CUDACPU_SCOPED(atomicMax)
CUDACPU_SCOPED(atomicInc)
CUDACPU_SCOPED(atomicDec)
CUDACPU_SCOPED(atomicCAS)
CUDACPU_SCOPED(atomicAnd)
CUDACPU_SCOPED(atomicOr)
CUDACPU_SCOPED(atomicXor)
#undef CUDACPU_SCOPED

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
