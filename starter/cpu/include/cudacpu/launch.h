// Kernel launches.
//
// The driver rewrites `kernel<<<grid, block, smem, stream>>>(args...)` into
//     ::cudacpu::launch(site, identifiable, [&](auto&... a) { kernel(a...); }, grid, block, smem, stream)(args...)
// The arguments are evaluated once, on the host, as with CUDA; every CUDA
// thread then calls the kernel with its own copies of them. Calling the
// kernel through a generic lambda lets C++ deduce a template kernel's
// arguments exactly as nvcc does.
//
// Every kernel the driver rewrote starts with a prologue that, when asked
// (t_identify), reports which kernel it is (its name, a key unique to the
// instantiation, its __launch_bounds__) and returns at once. A launch asks
// before it runs anything, so that the checks a GPU makes per kernel (the
// dynamic shared memory opt-in, launch bounds) apply to the right one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "runtime_api.h"

namespace cudacpu {

struct LaunchSite {
    const char* file;
    int line;
    const char* kernel;  // the launch's callee, as written
};

namespace detail {

struct KernelIdentity {
    const void* key = nullptr;  // unique per kernel instantiation; null: not identified
    const char* name = nullptr;
    int max_threads = 0;        // __launch_bounds__, 0 if none
};

extern __thread bool t_identify;
extern __thread KernelIdentity* t_identity;

// Called by a kernel's prologue in identify mode.
inline void identify_kernel(const void* key, const char* name, int max_threads = 0, int = 0, int = 0) {
    t_identity->key = key;
    t_identity->name = name;
    t_identity->max_threads = max_threads;
}

// Runs `body` in identify mode: the kernel's prologue fills `id` and returns.
template <class Body>
inline KernelIdentity identify(Body&& body) {
    KernelIdentity id;
    t_identity = &id;
    t_identify = true;
    body();
    t_identify = false;
    return id;
}

// A pointer argument, for the check that kernels get device memory.
struct PointerArgument {
    int index;
    const void* value;
};

using ThreadEntry = void (*)(void* context);

// Checks the configuration, runs every block and returns the launch's error
// (also recorded for cudaGetLastError).
cudaError_t run_kernel(const LaunchSite& site, const KernelIdentity& id, dim3 grid, dim3 block,
                       std::size_t dynamic_shared_bytes, cudaStream_t stream, const PointerArgument* pointers,
                       int pointer_count, ThreadEntry entry, void* context);

template <class Arg>
inline void collect_pointer(const Arg& a, int index, PointerArgument* out, int* n) {
    if constexpr (std::is_pointer<Arg>::value && !std::is_function<std::remove_pointer_t<Arg>>::value)
        out[(*n)++] = PointerArgument{index, reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(a))};
}

template <class Body, class Args>
struct ThreadCall {
    Body* body;
    Args* args;
    static void run(void* self) {
        auto* call = static_cast<ThreadCall*>(self);
        std::apply(*call->body, *call->args);
    }
};

template <class Body, class Args>
inline cudaError_t launch_with(const LaunchSite& site, bool identifiable, Body& body, Args& args, dim3 grid, dim3 block,
                               std::size_t smem, cudaStream_t stream) {
    KernelIdentity id;
    if (identifiable) id = identify([&] { std::apply(body, args); });
    PointerArgument pointers[std::tuple_size<Args>::value + 1];
    int count = 0;
    std::apply(
        [&](auto&... a) {
            int index = 0;
            (collect_pointer(a, index++, pointers, &count), ...);
        },
        args);
    ThreadCall<Body, Args> call{&body, &args};
    return run_kernel(site, id, grid, block, smem, stream, pointers, count, &ThreadCall<Body, Args>::run, &call);
}

}  // namespace detail

template <class Body>
class PendingLaunch {
public:
    PendingLaunch(LaunchSite site, bool identifiable, Body body, dim3 grid, dim3 block, std::size_t smem,
                  cudaStream_t stream)
        : site_(site), identifiable_(identifiable), body_(body), grid_(grid), block_(block), smem_(smem),
          stream_(stream) {}

    template <class... A>
    void operator()(A&&... a) {
        auto args = std::make_tuple(std::forward<A>(a)...);
        detail::launch_with(site_, identifiable_, body_, args, grid_, block_, smem_, stream_);
    }

private:
    LaunchSite site_;
    bool identifiable_;
    Body body_;
    dim3 grid_, block_;
    std::size_t smem_;
    cudaStream_t stream_;
};

template <class Body>
inline PendingLaunch<Body> launch(LaunchSite site, bool identifiable, Body body, dim3 grid, dim3 block,
                                  std::size_t smem = 0, cudaStream_t stream = 0) {
    return PendingLaunch<Body>(site, identifiable, body, grid, block, smem, stream);
}

// Marks a kernel the driver knows has the identify prologue, so that the
// calls below may ask it who it is (cudaFuncSetAttribute(::cudacpu::prologued, k, ...)).
struct Prologued {};
constexpr Prologued prologued{};

namespace detail {

// Asks a kernel (through a pointer to it) who it is, calling it with
// value-initialized arguments that its prologue never reads.
template <class R, class... P>
inline KernelIdentity identify_pointer(R (*f)(P...)) {
    if constexpr ((std::is_default_constructible<P>::value && ...))
        return identify([&] { f(P()...); });
    else
        return KernelIdentity{};
}

template <class... P, std::size_t... I>
inline std::tuple<std::decay_t<P>...> arguments_from(void** args, std::index_sequence<I...>) {
    return std::tuple<std::decay_t<P>...>(*static_cast<std::decay_t<P>*>(args[I])...);
}

cudaError_t func_set_attribute(const KernelIdentity& id, const void* pointer, cudaFuncAttribute attr, int value);
cudaError_t func_get_attributes(const KernelIdentity& id, const void* pointer, cudaFuncAttributes* attr);
cudaError_t occupancy_max_active_blocks(const KernelIdentity& id, int* blocks, int block_size,
                                        std::size_t dynamic_shared_bytes);

}  // namespace detail
}  // namespace cudacpu

template <class R, class... P>
inline cudaError_t cudaFuncSetAttribute(cudacpu::Prologued, R (*f)(P...), cudaFuncAttribute attr, int value) {
    return cudacpu::detail::func_set_attribute(cudacpu::detail::identify_pointer(f), reinterpret_cast<const void*>(f),
                                               attr, value);
}
template <class F>
inline cudaError_t cudaFuncSetAttribute(F* f, cudaFuncAttribute attr, int value) {
    return cudacpu::detail::func_set_attribute({}, reinterpret_cast<const void*>(f), attr, value);
}
template <class R, class... P>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, cudacpu::Prologued, R (*f)(P...)) {
    return cudacpu::detail::func_get_attributes(cudacpu::detail::identify_pointer(f), reinterpret_cast<const void*>(f),
                                                attr);
}
template <class F>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F* f) {
    return cudacpu::detail::func_get_attributes({}, reinterpret_cast<const void*>(f), attr);
}
template <class F>
inline cudaError_t cudaFuncSetCacheConfig(F*, cudaFuncCache) {
    return cudaSuccess;
}
template <class R, class... P>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, cudacpu::Prologued, R (*f)(P...),
                                                                 int block_size, std::size_t smem) {
    return cudacpu::detail::occupancy_max_active_blocks(cudacpu::detail::identify_pointer(f), blocks, block_size, smem);
}
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F*, int block_size, std::size_t smem) {
    return cudacpu::detail::occupancy_max_active_blocks({}, blocks, block_size, smem);
}

// cudaLaunchKernel(kernel, grid, block, args, smem, stream): args[i] points to argument i.
template <class... P>
inline cudaError_t cudaLaunchKernel(void (*f)(P...), dim3 grid, dim3 block, void** args, std::size_t smem = 0,
                                    cudaStream_t stream = 0) {
    auto tuple = cudacpu::detail::arguments_from<P...>(args, std::index_sequence_for<P...>{});
    auto body = [f](auto&... a) { f(a...); };
    const cudacpu::LaunchSite site{"(cudaLaunchKernel)", 0, "kernel"};
    return cudacpu::detail::launch_with(site, false, body, tuple, grid, block, smem, stream);
}
