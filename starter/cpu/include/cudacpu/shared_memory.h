// __shared__ variables, per block.
//
// Blocks run at the same time on several worker threads, so a kernel's
// __shared__ variables cannot be ordinary statics. The driver rewrites
//     __shared__ float tile[32][33];
// into a reference to the running block's copy:
//     static char k_; float (&tile)[32][33] = ::cudacpu::shared_var<float[32][33], 0>(&k_, "tile", __FILE__, __LINE__);
// and `extern __shared__ float smem[];` into a pointer to the block's dynamic
// shared memory. Each block's shared memory starts out filled with garbage
// (NaN for floats), so reading an element no thread wrote gives a visibly
// wrong result, and under AddressSanitizer every variable is surrounded by
// poisoned bytes, so an access past its end is reported with its name.
#pragma once

#include <cstddef>
#include <type_traits>

#include "device_state.h"

namespace cudacpu {
namespace detail {

// A __shared__ declaration: what diagnostics say about it.
struct SharedVarInfo {
    const char* name;
    Site site;
    std::size_t bytes;
    std::size_t align;
    std::size_t element_bytes;  // of the innermost element type
    int rank;                   // array dimensions (0: a scalar)
    std::size_t extents[4];
    const char* element_type;   // "float", "int", ... or nullptr
};

// The block's copy of the variable identified by `key` (the same address for
// every thread of the block), allocated and filled with garbage the first
// time a thread of the block reaches the declaration.
void* shared_alloc(const void* key, const SharedVarInfo& info);
// The block's dynamic shared memory (the launch's third <<<>>> argument).
extern __thread char* t_dynamic_shared;
void note_dynamic_shared(const char* name, Site site, std::size_t element_bytes);

template <class E> constexpr const char* type_name() { return nullptr; }
template <> constexpr const char* type_name<float>() { return "float"; }
template <> constexpr const char* type_name<double>() { return "double"; }
template <> constexpr const char* type_name<int>() { return "int"; }
template <> constexpr const char* type_name<unsigned>() { return "unsigned"; }
template <> constexpr const char* type_name<long>() { return "long"; }
template <> constexpr const char* type_name<unsigned long>() { return "unsigned long"; }
template <> constexpr const char* type_name<long long>() { return "long long"; }
template <> constexpr const char* type_name<unsigned long long>() { return "unsigned long long"; }
template <> constexpr const char* type_name<char>() { return "char"; }
template <> constexpr const char* type_name<signed char>() { return "signed char"; }
template <> constexpr const char* type_name<unsigned char>() { return "unsigned char"; }
template <> constexpr const char* type_name<short>() { return "short"; }
template <> constexpr const char* type_name<unsigned short>() { return "unsigned short"; }
template <> constexpr const char* type_name<bool>() { return "bool"; }

template <class T, std::size_t Align>
inline SharedVarInfo shared_info(const char* name, const char* file, int line) {
    using E = std::remove_cv_t<std::remove_all_extents_t<T>>;
    constexpr std::size_t align = Align > alignof(T) ? Align : alignof(T);
    return SharedVarInfo{name,
                         Site{file, line},
                         sizeof(T),
                         align,
                         sizeof(E),
                         static_cast<int>(std::rank<T>::value),
                         {std::extent<T, 0>::value, std::extent<T, 1>::value, std::extent<T, 2>::value,
                          std::extent<T, 3>::value},
                         type_name<E>()};
}

}  // namespace detail

template <class T, std::size_t Align>
inline T& shared_var(const void* key, const char* name, const char* file, int line) {
    return *static_cast<T*>(detail::shared_alloc(key, detail::shared_info<T, Align>(name, file, line)));
}

// `extern __shared__ T name[];` (T may itself be an array type, for
// `extern __shared__ float s[][32]`): all such declarations share one start.
template <class T>
inline T* dynamic_shared(const char* name, const char* file, int line) {
    detail::note_dynamic_shared(name, Site{file, line}, sizeof(std::remove_all_extents_t<T>));
    return reinterpret_cast<T*>(detail::t_dynamic_shared);
}

}  // namespace cudacpu
