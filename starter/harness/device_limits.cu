#include "device_limits.h"

#include "counter_rng.h"
#ifndef CUDACPU_BACKEND
#include "cublas_check.h"
#endif
#include "device_buffer.h"
#include "device_ops.h"

#ifdef CUDACPU_BACKEND
#include <stdexcept>
// No limits to measure on the CPU backend: it times nothing, and has no cuBLAS to time.
DeviceLimits measure_limits(const TimingOptions&) {
    throw std::runtime_error("times need a GPU: the CPU backend checks correctness only, so it measures no device "
                             "limits (run on a GPU for times)");
}
#else
DeviceLimits measure_limits(const TimingOptions& options) {
    DeviceLimits lim;
    int device = 0, sms = 0, clock_khz = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    lim.peak_sm_clock_mhz = clock_khz / 1000;
    lim.peak_fp32_gflops = peak_fp32_gflops(sms, clock_khz / 1000.0);
    lim.l2_bytes = static_cast<std::size_t>(l2);
    L2Flusher flusher;
    auto nothing = [] {};
    auto no_check = [](int) {};

    lim.copy_bytes = std::size_t(1) << 30;
    {
        DeviceBuffer src(lim.copy_bytes), dst(lim.copy_bytes);
        generate_on_device(DType::i32, src.get(), lim.copy_bytes / 4, rng_key(1, 0), Distribution::signed_unit, 8);
        const TimingResult t = time_launcher(
            [&] { CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), lim.copy_bytes, cudaMemcpyDeviceToDevice, 0)); },
            nothing, no_check, options, flusher);
        lim.copy_stats = t.stats;
        lim.copy_gbps = 2.0 * lim.copy_bytes / (t.stats.median * 1e-3) / 1e9;
    }

    const int m = static_cast<int>(lim.sgemm_shape.m()), n = static_cast<int>(lim.sgemm_shape.n()),
              k = static_cast<int>(lim.sgemm_shape.k());
    DeviceBuffer a(sizeof(float) * m * k), b(sizeof(float) * k * n), c(sizeof(float) * m * n);
    generate_on_device(DType::f32, a.get(), std::size_t(m) * k, rng_key(1, 1), Distribution::signed_unit, 0);
    generate_on_device(DType::f32, b.get(), std::size_t(k) * n, rng_key(1, 2), Distribution::signed_unit, 0);
    CublasHandle handle;
    CUBLAS_CHECK(cublasSetMathMode(handle.get(), CUBLAS_PEDANTIC_MATH));
    const float one = 1, zero = 0;
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
    const TimingResult t = time_launcher(
        [&] {
            CUBLAS_CHECK(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b.as<float>(), n,
                                     a.as<float>(), k, &zero, c.as<float>(), n));
        },
        nothing, no_check, options, flusher);
    lim.sgemm_stats = t.stats;
    lim.sgemm_gflops = 2.0 * m * n * k / (t.stats.median * 1e-3) / 1e9;
    return lim;
}
#endif
