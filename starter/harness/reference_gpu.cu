#include "reference_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "compensated.h"

#ifdef CUDACPU_BACKEND
#include <thread>

#include <cudacpu/extension.h>
#else
#include "cublas_check.h"
#endif
#include "cuda_check.h"
#include "device_buffer.h"
#include "device_ops.h"

namespace {

constexpr int kTile = 16;

// One element of C per thread, 16 x 16 tiles through shared memory, the sum
// compensated. Block rows stride by gridDim.y: m may need more than grid.y's 65,535.
__global__ void gemm_compensated_kernel(const double* a, const double* b, int m, int n, int k, double* value) {
    __shared__ double a_tile[kTile][kTile], b_tile[kTile][kTile];
    const int col = blockIdx.x * kTile + threadIdx.x;
    for (int row0 = blockIdx.y * kTile; row0 < m; row0 += gridDim.y * kTile) {
        const int row = row0 + threadIdx.y;
        CompensatedSum sum;
        for (int k0 = 0; k0 < k; k0 += kTile) {
            const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
            a_tile[threadIdx.y][threadIdx.x] = row < m && ka < k ? a[std::size_t(row) * k + ka] : 0.0;
            b_tile[threadIdx.y][threadIdx.x] = kb < k && col < n ? b[std::size_t(kb) * n + col] : 0.0;
            __syncthreads();
            for (int p = 0; p < kTile; ++p) sum.add_product(a_tile[threadIdx.y][p], b_tile[p][threadIdx.x]);
            __syncthreads();
        }
        if (row < m && col < n) value[std::size_t(row) * n + col] = sum.value();
    }
}

}  // namespace

#ifdef CUDACPU_BACKEND
// The CPU backend has no cuBLAS: device memory is host memory there, so the
// references are computed by this loop (the same values as DGEMM: products of
// float32 and int32 inputs are exact in float64), the float64 case compensated
// as on the GPU. Rows are independent; i-k-j order keeps the loop cache-friendly.
// The rows are shared among as many threads as the backend has workers: run on
// one, the references of 515 x 509 x 521 took an eighth of the CPU suite's time
// while the other core waited.
namespace {
template <typename T>
void gemm_reference_rows(const T* a, const T* b, int row_begin, int row_end, int n, int k, double* value,
                         double* magnitude) {
    std::vector<CompensatedSum> sums(static_cast<std::size_t>(n));
    std::vector<double> mags(static_cast<std::size_t>(n));
    for (int i = row_begin; i < row_end; ++i) {
        std::fill(sums.begin(), sums.end(), CompensatedSum{});
        std::fill(mags.begin(), mags.end(), 0.0);
        for (int p = 0; p < k; ++p) {
            const double x = static_cast<double>(a[std::size_t(i) * k + p]);
            const T* brow = b + std::size_t(p) * n;
            for (int j = 0; j < n; ++j) {
                const double y = static_cast<double>(brow[j]);
                if constexpr (std::is_same_v<T, double>) sums[j].add_product(x, y);
                else sums[j].add_exact_product(x, y);
                mags[j] += std::fabs(x * y);
            }
        }
        for (int j = 0; j < n; ++j) {
            value[std::size_t(i) * n + j] = sums[j].value();
            magnitude[std::size_t(i) * n + j] = mags[j];
        }
    }
}

template <typename T>
void gemm_reference_host(const T* a, const T* b, int m, int n, int k, double* value, double* magnitude) {
    const int parts = std::max(1, std::min(cudacpu_workers(), m));
    std::vector<std::thread> helpers;
    for (int part = 1; part < parts; ++part)
        helpers.emplace_back(gemm_reference_rows<T>, a, b, int(std::int64_t(m) * part / parts),
                             int(std::int64_t(m) * (part + 1) / parts), n, k, value, magnitude);
    gemm_reference_rows(a, b, 0, int(std::int64_t(m) / parts), n, k, value, magnitude);
    for (std::thread& h : helpers) h.join();
}
}  // namespace

void gemm_reference_device(DType t, const void* a, const void* b, int m, int n, int k, double* value,
                           double* magnitude) {
    CUDA_CHECK(cudaDeviceSynchronize());
    switch (t) {
        case DType::f32: gemm_reference_host(static_cast<const float*>(a), static_cast<const float*>(b), m, n, k, value, magnitude); break;
        case DType::f64: gemm_reference_host(static_cast<const double*>(a), static_cast<const double*>(b), m, n, k, value, magnitude); break;
        case DType::i32: gemm_reference_host(static_cast<const std::int32_t*>(a), static_cast<const std::int32_t*>(b), m, n, k, value, magnitude); break;
    }
}
#else
namespace {

// cuBLAS for the references, made once per process (a handle takes milliseconds to make, and
// timed runs compute a reference each), with a workspace of ours that is zeroed after each
// use: no partial sum of a reference stays in memory while the student's code runs.
struct ReferenceBlas {
    static constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;
    CublasHandle handle;
    DeviceBuffer workspace{kWorkspaceBytes};
    DeviceBuffer a, b;  // the inputs as float64, grown as needed

    ReferenceBlas() { CUBLAS_CHECK(cublasSetWorkspace(handle.get(), workspace.get(), kWorkspaceBytes)); }
    double* operands(DeviceBuffer& buffer, std::size_t elements) {
        if (buffer.bytes() < elements * sizeof(double)) buffer = DeviceBuffer(elements * sizeof(double));
        return buffer.as<double>();
    }
};

ReferenceBlas& reference_blas() {
    static ReferenceBlas* blas = new ReferenceBlas();  // never destroyed: the CUDA context may be gone at exit
    return *blas;
}

}  // namespace

void gemm_reference_device(DType t, const void* a, const void* b, int m, int n, int k, double* value,
                           double* magnitude) {
    const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n;
    ReferenceBlas& blas = reference_blas();
    double* ad = blas.operands(blas.a, na);
    double* bd = blas.operands(blas.b, nb);
    const double one = 1, zero = 0;
    for (bool absolute : {false, true}) {
        to_double_on_device(t, a, ad, na, absolute);
        to_double_on_device(t, b, bd, nb, absolute);
        if (!absolute && t == DType::f64) {
            const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, std::min((m + kTile - 1) / kTile, 65535));
            gemm_compensated_kernel<<<grid, block>>>(ad, bd, m, n, k, value);
            CUDA_CHECK(cudaGetLastError());
            continue;
        }
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
        CUBLAS_CHECK(cublasDgemm(blas.handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, bd, n, ad, k, &zero,
                                 absolute ? magnitude : value, n));
    }
    CUDA_CHECK(cudaMemsetAsync(blas.workspace.get(), 0, ReferenceBlas::kWorkspaceBytes, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
}

#endif

namespace {

__global__ void dot_kernel(const float* x, const float* y, std::size_t n, double* value, double* magnitude) {
    __shared__ double s_value[256], s_magnitude[256];
    double v = 0, mag = 0;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        const double p = static_cast<double>(x[i]) * static_cast<double>(y[i]);
        v += p;
        mag += fabs(p);
    }
    s_value[threadIdx.x] = v;
    s_magnitude[threadIdx.x] = mag;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            s_value[threadIdx.x] += s_value[threadIdx.x + stride];
            s_magnitude[threadIdx.x] += s_magnitude[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(value, s_value[0]);
        atomicAdd(magnitude, s_magnitude[0]);
    }
}

}  // namespace

void dot_reference_device(const float* x, const float* y, std::size_t n, double* value, double* magnitude) {
    CUDA_CHECK(cudaMemset(value, 0, sizeof(double)));
    CUDA_CHECK(cudaMemset(magnitude, 0, sizeof(double)));
    dot_kernel<<<1024, 256>>>(x, y, n, value, magnitude);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
}
