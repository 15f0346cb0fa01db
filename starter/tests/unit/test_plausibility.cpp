// The plausibility floor's arithmetic, on the H200 of docs/gpu-runs (132 SMs,
// 1980 MHz, 60 MiB L2, copy 4250 GB/s, cuBLAS SGEMM 51,371 GFLOP/s).
#include <doctest/doctest.h>

#include "device_limits.h"
#include "registry.h"

namespace {

DeviceLimits h200() {
    DeviceLimits l;
    l.copy_gbps = 4250;
    l.sgemm_gflops = 51371;
    l.peak_sm_clock_mhz = 1980;
    l.peak_fp32_gflops = peak_fp32_gflops(132, 1980);
    l.l2_bytes = 60 << 20;
    return l;
}

double floor_ms(const char* task, const Shape& s) {
    const Task& t = *find_task(task);
    return h200().floor(t.flops(s), t.min_bytes(s, DType::f32)).seconds * 1e3;
}

}  // namespace

TEST_CASE("the FP32 peak is SMs x clock x 128 lanes x 2") {
    CHECK(peak_fp32_gflops(132, 1980) == doctest::Approx(66908.16));  // the "about 66.9 TFLOP/s"
    CHECK(h200().sgemm_gflops / h200().peak_fp32_gflops == doctest::Approx(0.768).epsilon(0.01));
}

TEST_CASE("a matmul's floor is set by the FP32 peak with a 10% margin") {
    const Shape s = Shape::gemm(4096, 4096, 4096);
    const Task& t = *find_task("matmul_fast");
    const PlausibilityFloor f = h200().floor(t.flops(s), t.min_bytes(s, DType::f32));
    CHECK(f.bound == "fp32_peak");
    CHECK(f.seconds * 1e3 == doctest::Approx(2.0 * 4096 * 4096 * 4096 / (1.1 * 66908.16e9) * 1e3));
    CHECK(f.seconds * 1e3 == doctest::Approx(1.8675).epsilon(0.001));
    // cuBLAS at 4096^3 (2.68 ms) and the solution (3.87 ms, recorded) are well above it; a cached
    // result copied into c (64 MiB at the copy bandwidth: 0.03 ms) is far below.
    CHECK(2.0 * 4096 * 4096 * 4096 / 51371e9 * 1e3 > f.seconds * 1e3 * 1.3);
    CHECK(3.8662 > f.seconds * 1e3);
    CHECK(2.0 * 4096 * 4096 * 4 / 4250e9 * 1e3 < f.seconds * 1e3 / 50);
}

TEST_CASE("a memory-bound task's floor leaves out an L2's worth of bytes and allows 1.25x the copy") {
    const double f = floor_ms("fill", Shape::matrix(8192, 8192));
    CHECK(f == doctest::Approx((8192.0 * 8192 * 4 - (60 << 20)) / (1.25 * 4250e9) * 1e3));
    CHECK(h200().floor(0, 8192.0 * 8192 * 4).bound == "bandwidth");
    // The solution's fill ran at 103.9% of the copy bandwidth: 0.0608 ms, 1.57x the floor.
    const double solution_fill_ms = 8192.0 * 8192 * 4 / (1.039 * 4250e9) * 1e3;
    CHECK(solution_fill_ms > 1.5 * f);
    // Even a kernel at the memory's physical peak (4.8 TB/s) stays above it.
    CHECK(8192.0 * 8192 * 4 / 4.8e12 * 1e3 > f);
}

TEST_CASE("dot at 2^28 and transpose at 8192^2: the recorded solution times are above their floors") {
    CHECK(2.0 * 4 * (1 << 28) / (1.023 * 4250e9) * 1e3 > floor_ms("dot", Shape::vector(1 << 28)));
    CHECK(2.0 * 4 * 8192 * 8192 / (0.832 * 4250e9) * 1e3 > floor_ms("transpose", Shape::matrix(8192, 8192)));
}

TEST_CASE("a case that fits in the L2 has no bandwidth floor, and unknown limits no floor at all") {
    CHECK(floor_ms("add", Shape::matrix(64, 64)) < 1e-6);  // only the arithmetic floor: 4096 FLOPs
    CHECK(plausibility_floor(1e12, 1e9, 0, 0, 0).seconds == 0);
}
