#include "reference_gpu.h"

#include <algorithm>

#include "compensated.h"

#include "cublas_check.h"
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

void gemm_reference_device(DType t, const void* a, const void* b, int m, int n, int k, double* value,
                           double* magnitude) {
    const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n;
    DeviceBuffer ad(na * sizeof(double)), bd(nb * sizeof(double));
    CublasHandle handle;
    const double one = 1, zero = 0;
    for (bool absolute : {false, true}) {
        to_double_on_device(t, a, ad.as<double>(), na, absolute);
        to_double_on_device(t, b, bd.as<double>(), nb, absolute);
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
        if (!absolute && t == DType::f64) {
            const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, std::min((m + kTile - 1) / kTile, 65535));
            gemm_compensated_kernel<<<grid, block>>>(ad.as<double>(), bd.as<double>(), m, n, k, value);
            CUDA_CHECK(cudaGetLastError());
            continue;
        }
        CUBLAS_CHECK(cublasDgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, bd.as<double>(), n, ad.as<double>(),
                                 k, &zero, absolute ? magnitude : value, n));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
}

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
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
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
