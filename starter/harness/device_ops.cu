#include "device_ops.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "cuda_check.h"
#include "device_buffer.h"

namespace {

__device__ bool is_poison(float v) { return __float_as_uint(v) == kPoisonF32; }
__device__ bool is_poison(double v) {
    return static_cast<unsigned long long>(__double_as_longlong(v)) == kPoisonF64;
}
__device__ bool is_poison(std::int32_t v) { return v == kPoisonI32; }

template <typename T> __device__ T poison_value();
template <> __device__ float poison_value<float>() { return __uint_as_float(kPoisonF32); }
template <> __device__ double poison_value<double>() {
    return __longlong_as_double(static_cast<long long>(kPoisonF64));
}
template <> __device__ std::int32_t poison_value<std::int32_t>() { return kPoisonI32; }

#ifndef CUDACPU_BACKEND
constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
    const std::size_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(b < 4096 ? (b ? b : 1) : 4096);
}

template <typename T>
__global__ void generate_kernel(T* out, std::size_t n, std::uint64_t key, Distribution d, std::int64_t int_bound) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        out[i] = rng_value<T>(key, i, d, int_bound);
}

template <typename T>
__global__ void poison_kernel(T* out, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        out[i] = poison_value<T>();
}

__global__ void bounds_kernel(double* m, std::size_t n, Tolerance tol, double k, double u, double tiny) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        m[i] = tolerance_bound(tol, k, u, m[i], tiny);
}

template <typename T>
__global__ void to_double_kernel(const T* in, double* out, std::size_t n, bool absolute) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        const double v = static_cast<double>(in[i]);
        out[i] = absolute ? fabs(v) : v;
    }
}

__global__ void equal_kernel(const std::uint32_t* a, const std::uint32_t* b, std::size_t words, int* differs) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x)
        if (a[i] != b[i]) *differs = 1;
}

template <typename T>
__global__ void not_poison_kernel(const T* a, std::size_t begin, std::size_t end, unsigned long long* count) {
    for (std::size_t i = begin + blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < end; i += std::size_t(gridDim.x) * blockDim.x)
        if (!is_poison(a[i])) atomicAdd(count, 1ull);
}
#endif

__device__ double error_ratio(double got, double ref, double bound) {
    const double diff = fabs(got - ref);
    if (!(diff <= DBL_MAX)) return INFINITY;  // NaN or Inf
    if (bound > 0) return diff / bound;
    return diff > 0 ? INFINITY : 0.0;
}

// What the comparison finds at element i: the same code on a GPU (compare_kernel) and on the CPU
// backend (compare_on_host).
struct ElementVerdict {
    bool wrong = false, unwritten = false, nonfinite = false, transposed = false;
    bool edge[kEdgeTileCount] = {};
    double ratio = 0;
};

template <typename T>
__device__ ElementVerdict judge_element(const T* out, const double* ref, const double* bound, std::size_t i,
                                        std::int64_t rows, std::int64_t cols, bool analyze, bool square) {
    ElementVerdict e;
    const T v = out[i];
    const double got = static_cast<double>(v);
    e.wrong = !within_tolerance(got, ref[i], bound[i]);
    e.unwritten = is_poison(v);
    e.nonfinite = !(fabs(got) <= DBL_MAX);
    e.ratio = error_ratio(got, ref[i], bound[i]);
    if (analyze && e.wrong) {
        const std::int64_t r = static_cast<std::int64_t>(i) / cols, c = static_cast<std::int64_t>(i) % cols;
        for (int t = 0; t < kEdgeTileCount; ++t) {
            const std::int64_t T_ = edge_tile(t);
            // Only a dimension with at least one full tile has a partial last one.
            e.edge[t] = (rows > T_ && rows % T_ && r >= rows - rows % T_) ||
                        (cols > T_ && cols % T_ && c >= cols - cols % T_);
        }
    }
    if (square) {
        const std::int64_t r = static_cast<std::int64_t>(i) / cols, c = static_cast<std::int64_t>(i) % cols;
        const std::size_t j = static_cast<std::size_t>(c * cols + r);
        e.transposed = within_tolerance(got, ref[j], bound[j]);
    }
    return e;
}

#ifndef CUDACPU_BACKEND
// Warp-aggregated counting: one atomic per warp and counter, so a fully wrong
// 8192 x 8192 output costs no more than a correct one.
__device__ void warp_count(unsigned long long* counter, bool flag) {
    const unsigned votes = __ballot_sync(0xffffffffu, flag);
    if ((threadIdx.x & 31) == 0 && votes) atomicAdd(counter, static_cast<unsigned long long>(__popc(votes)));
}

template <typename T>
__global__ void compare_kernel(const T* out, const double* ref, const double* bound, std::size_t n,
                               std::int64_t rows, std::int64_t cols, bool analyze, CompareSummary* s) {
    const bool square = analyze && rows == cols && rows > 1;
    double ratio_sum = 0;  // this thread's share, added up once at the end (one atomic per warp, not per step)
    // `base` depends on the block only, so every lane of a warp runs the same
    // number of iterations and the ballots below see the whole warp.
    for (std::size_t base = blockIdx.x * std::size_t(blockDim.x); base < n; base += std::size_t(gridDim.x) * blockDim.x) {
        const std::size_t i = base + threadIdx.x;
        const ElementVerdict e = i < n ? judge_element(out, ref, bound, i, rows, cols, analyze, square) : ElementVerdict{};
        double ratio = e.ratio;
        ratio_sum += ratio;
        warp_count(&s->wrong, e.wrong);
        warp_count(&s->unwritten, e.unwritten);
        warp_count(&s->nonfinite, e.nonfinite);
        for (int t = 0; t < kEdgeTileCount; ++t) warp_count(&s->wrong_in_edge[t], e.edge[t]);
        if (square) warp_count(&s->matches_transposed, e.transposed);

        const unsigned wrong_lanes = __ballot_sync(0xffffffffu, e.wrong);
        if (wrong_lanes && (threadIdx.x & 31) == static_cast<unsigned>(__ffs(wrong_lanes) - 1))
            atomicMin(&s->first_wrong, static_cast<unsigned long long>(i));
        for (int offset = 16; offset > 0; offset /= 2) ratio = fmax(ratio, __shfl_xor_sync(0xffffffffu, ratio, offset));
        // Non-negative doubles order like their bit patterns, so an integer max works.
        if ((threadIdx.x & 31) == 0 && ratio > 0)
            atomicMax(reinterpret_cast<unsigned long long*>(&s->worst_ratio),
                      static_cast<unsigned long long>(__double_as_longlong(ratio)));
    }
    for (int offset = 16; offset > 0; offset /= 2) ratio_sum += __shfl_xor_sync(0xffffffffu, ratio_sum, offset);
    if ((threadIdx.x & 31) == 0 && ratio_sum != 0) atomicAdd(&s->ratio_sum, ratio_sum);
}
#else
template <typename T>
CompareSummary compare_on_host(const T* out, const double* ref, const double* bound, std::size_t n,
                               std::int64_t rows, std::int64_t cols, bool analyze) {
    const bool square = analyze && rows == cols && rows > 1;
    CompareSummary s;
    for (std::size_t i = 0; i < n; ++i) {
        const ElementVerdict e = judge_element(out, ref, bound, i, rows, cols, analyze, square);
        s.wrong += e.wrong;
        s.unwritten += e.unwritten;
        s.nonfinite += e.nonfinite;
        for (int t = 0; t < kEdgeTileCount; ++t) s.wrong_in_edge[t] += e.edge[t];
        s.matches_transposed += e.transposed;
        if (e.wrong && s.first_wrong == ~0ull) s.first_wrong = i;
        s.worst_ratio = std::max(s.worst_ratio, e.ratio);
        s.ratio_sum += e.ratio;
    }
    return s;
}
#endif

}  // namespace

#ifndef CUDACPU_BACKEND
void generate_on_device(DType t, void* out, std::size_t n, std::uint64_t key, Distribution d, std::int64_t int_bound) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        generate_kernel<<<blocks_for(n), kThreads>>>(static_cast<T*>(out), n, key, d, int_bound);
    });
    CUDA_CHECK(cudaGetLastError());
}

void poison_on_device(DType t, void* out, std::size_t n) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        poison_kernel<<<blocks_for(n), kThreads>>>(static_cast<T*>(out), n);
    });
    CUDA_CHECK(cudaGetLastError());
}

void bounds_on_device(double* m, std::size_t n, Tolerance tol, double k, double u, double tiny) {
    bounds_kernel<<<blocks_for(n), kThreads>>>(m, n, tol, k, u, tiny);
    CUDA_CHECK(cudaGetLastError());
}

void to_double_on_device(DType t, const void* in, double* out, std::size_t n, bool absolute) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        to_double_kernel<<<blocks_for(n), kThreads>>>(static_cast<const T*>(in), out, n, absolute);
    });
    CUDA_CHECK(cudaGetLastError());
}

CompareSummary compare_on_device(DType t, const void* out, const double* ref, const double* bound,
                                 OutputLayout layout, bool analyze) {
    DeviceBuffer summary(sizeof(CompareSummary));
    const CompareSummary init;
    CUDA_CHECK(cudaMemcpy(summary.get(), &init, sizeof init, cudaMemcpyHostToDevice));
    const std::size_t n = layout.elements();
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        compare_kernel<<<blocks_for(n), kThreads>>>(static_cast<const T*>(out), ref, bound, n, layout.rows,
                                                    layout.cols, analyze, summary.as<CompareSummary>());
    });
    CUDA_CHECK(cudaGetLastError());
    CompareSummary result;
    CUDA_CHECK(cudaMemcpy(&result, summary.get(), sizeof result, cudaMemcpyDeviceToHost));
    return result;
}

bool equal_on_device(const void* a, const void* b, std::size_t bytes) {
    DeviceBuffer flag(sizeof(int));
    CUDA_CHECK(cudaMemset(flag.get(), 0, sizeof(int)));
    const std::size_t words = bytes / 4;  // every element type is 4 or 8 bytes
    equal_kernel<<<blocks_for(words), kThreads>>>(static_cast<const std::uint32_t*>(a),
                                                  static_cast<const std::uint32_t*>(b), words, flag.as<int>());
    CUDA_CHECK(cudaGetLastError());
    int differs = 0;
    CUDA_CHECK(cudaMemcpy(&differs, flag.get(), sizeof differs, cudaMemcpyDeviceToHost));
    return differs == 0;
}

std::size_t count_not_poison(DType t, const void* array, std::size_t begin, std::size_t end) {
    if (end <= begin) return 0;
    DeviceBuffer count(sizeof(unsigned long long));
    CUDA_CHECK(cudaMemset(count.get(), 0, sizeof(unsigned long long)));
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        not_poison_kernel<<<blocks_for(end - begin), kThreads>>>(static_cast<const T*>(array), begin, end,
                                                                 count.as<unsigned long long>());
    });
    CUDA_CHECK(cudaGetLastError());
    unsigned long long n = 0;
    CUDA_CHECK(cudaMemcpy(&n, count.get(), sizeof n, cudaMemcpyDeviceToHost));
    return static_cast<std::size_t>(n);
}
#else
// The CPU backend (cpu/README.md): device memory is host memory, and every launch has finished
// when it returns. The harness's own work is trusted and needs none of a GPU's threads, so it runs
// as plain loops over the same per-element code as the kernels above: as kernels, one fiber per
// CUDA thread, it took two thirds of the CPU suite's time (the comparison's 15 warp votes per
// element above all). The student's kernels still run as CUDA threads.
void generate_on_device(DType t, void* out, std::size_t n, std::uint64_t key, Distribution d, std::int64_t int_bound) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = static_cast<T*>(out);
        for (std::size_t i = 0; i < n; ++i) o[i] = rng_value<T>(key, i, d, int_bound);
    });
}

void poison_on_device(DType t, void* out, std::size_t n) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::fill_n(static_cast<T*>(out), n, poison_value<T>());
    });
}

void bounds_on_device(double* m, std::size_t n, Tolerance tol, double k, double u, double tiny) {
    for (std::size_t i = 0; i < n; ++i) m[i] = tolerance_bound(tol, k, u, m[i], tiny);
}

void to_double_on_device(DType t, const void* in, double* out, std::size_t n, bool absolute) {
    dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* from = static_cast<const T*>(in);
        for (std::size_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(from[i]);
            out[i] = absolute ? std::fabs(v) : v;
        }
    });
}

CompareSummary compare_on_device(DType t, const void* out, const double* ref, const double* bound,
                                 OutputLayout layout, bool analyze) {
    return dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return compare_on_host(static_cast<const T*>(out), ref, bound, layout.elements(), layout.rows, layout.cols,
                               analyze);
    });
}

bool equal_on_device(const void* a, const void* b, std::size_t bytes) {
    const std::size_t words = bytes / 4;  // every element type is 4 or 8 bytes
    return std::memcmp(a, b, words * 4) == 0;
}

std::size_t count_not_poison(DType t, const void* array, std::size_t begin, std::size_t end) {
    return dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* a = static_cast<const T*>(array);
        std::size_t n = 0;
        for (std::size_t i = begin; i < end; ++i) n += !is_poison(a[i]);
        return n;
    });
}
#endif

double read_element_as_double(DType t, const void* device_array, std::size_t index) {
    return dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T v{};
        CUDA_CHECK(cudaMemcpy(&v, static_cast<const T*>(device_array) + index, sizeof v, cudaMemcpyDeviceToHost));
        return static_cast<double>(v);
    });
}
