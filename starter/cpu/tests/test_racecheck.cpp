// Kernels built with `cudacpu.py compile --racecheck` (a separate test
// program): the race checker reports the planted races, naming the element,
// both threads and both lines, and says nothing about correct kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "kernels/textbook.h"
#include "support.h"
#include "tasks.h"

void race__dot(const float* x, const float* y, float* result, int n);
template <typename T>
void missing_syncthreads__matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k);

namespace {

template <class F>
cudaError_t error_of(F&& f) {
    try {
        f();
    } catch (const CudaError& e) {
        return e.code;
    }
    return cudaGetLastError();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("racecheck: blocks adding into *result with a plain += is a reported race") {
    ExpectFailure expect;
    const int n = 4096;
    DeviceArray<float> x(random_values<float>(n, 31), "x"), y(random_values<float>(n, 32), "y"), r(1, "result");
    CHECK(error_of([&] { race__dot(x.get(), y.get(), r.get(), n); }) == cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "data race on result[0] (global memory)"), d);
    CHECK_MESSAGE(has(d, "dot.cu:20"), d);
    CHECK_MESSAGE(has(d, "atomic"), d);
}

TEST_CASE("racecheck: a missing __syncthreads() is a reported shared-memory race") {
    ExpectFailure expect;
    const int m = 64;
    DeviceArray<float> a(random_values<float>(m * m, 33), "a"), b(random_values<float>(m * m, 34), "b"), c(m * m, "c");
    CHECK(error_of([&] { missing_syncthreads__matmul_tiled(a.get(), b.get(), c.get(), m, m, m); }) ==
          cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "(shared memory)"), d);
    CHECK_MESSAGE(has(d, "_tile["), d);
    CHECK_MESSAGE(has(d, "__syncthreads()"), d);
}

TEST_CASE("racecheck: the solution's and the textbook kernels have no races") {
    cudacpu_clear_diagnostic();
    const int m = 37, n = 45, k = 70;
    DeviceArray<float> a(random_values<float>(m * k, 35), "a"), b(random_values<float>(k * n, 36), "b"),
        c(m * n, "c"), t(m * k, "t"), r(1, "result");
    DeviceArray<std::int32_t> f(m * n, "f");
    CHECK(error_of([&] { fill(f.get(), m, n); }) == cudaSuccess);
    CHECK(error_of([&] { add(a.get(), a.get(), t.get(), m, k); }) == cudaSuccess);
    CHECK(error_of([&] { transpose(a.get(), t.get(), m, k); }) == cudaSuccess);
    CHECK(error_of([&] { matmul_naive(a.get(), b.get(), c.get(), m, n, k); }) == cudaSuccess);
    CHECK(error_of([&] { matmul_tiled(a.get(), b.get(), c.get(), m, n, k); }) == cudaSuccess);
    CHECK(error_of([&] { dot(a.get(), a.get(), r.get(), m * k); }) == cudaSuccess);
    CHECK(error_of([&] { textbook::matmul_shared(a.get(), b.get(), c.get(), m, n, k); }) == cudaSuccess);
    CHECK(error_of([&] { textbook::matmul_register_blocked(a.get(), b.get(), c.get(), m, n, k); }) == cudaSuccess);
    CHECK(error_of([&] { textbook::transpose_padded(a.get(), t.get(), m, k); }) == cudaSuccess);
    CHECK(error_of([&] { textbook::dot_shared_tree(a.get(), a.get(), r.get(), m * k); }) == cudaSuccess);
    CHECK(error_of([&] { textbook::dot_warp_shuffle(a.get(), a.get(), r.get(), m * k); }) == cudaSuccess);
    CHECK(std::string(cudacpu_last_diagnostic()).empty());
}
