// The planted student bugs of solution/tests/planted/, compiled unchanged by
// cudacpu.py (each task renamed so they link beside the solution), give a
// wrong result or a report on the CPU backend, as on a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "support.h"

void element_never_written__fill(std::int32_t* out, int rows, int cols);
void never_returns__fill(std::int32_t* out, int rows, int cols);
template <typename T>
void illegal_address__add(const T* a, const T* b, T* c, int rows, int cols);
template <typename T>
void inverted_indexing__matmul_naive(const T* a, const T* b, T* c, int m, int n, int k);
template <typename T>
void swapped_indices__matmul_naive(const T* a, const T* b, T* c, int m, int n, int k);
template <typename T>
void missing_bounds_check__matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k);
template <typename T>
void missing_syncthreads__matmul_tiled(const T* a, const T* b, T* c, int m, int n, int k);

namespace {

// The planted file's path, from this file's: both are in the repository.
std::string planted(const char* folder, const char* file) {
    std::string here = __FILE__;
    const std::string root = here.substr(0, here.rfind("/starter/cpu/tests/"));
    return root + "/solution/tests/planted/" + folder + "/" + file;
}

using Matmul = void (*)(const float*, const float*, float*, int, int, int);

// Elements of c = a b (m x n x k) that are wrong, with random inputs.
std::size_t wrong_elements(Matmul launch, int m, int n, int k) {
    const auto a = random_values<float>(std::size_t(m) * k, 21), b = random_values<float>(std::size_t(k) * n, 22);
    DeviceArray<float> da(a, "a"), db(b, "b"), dc(std::size_t(m) * n, "c");
    dc.poison();
    launch(da.get(), db.get(), dc.get(), m, n, k);
    std::vector<double> want, magnitude;
    matmul_reference(a, b, m, n, k, &want, &magnitude);
    return count_wrong(dc.download(), want, magnitude);
}

// The CUDA error the launcher's CUDA_CHECK_LAUNCH threw, or cudaSuccess.
template <class F>
cudaError_t error_of(F&& f) {
    try {
        f();
    } catch (const CudaError& e) {
        return e.code;
    }
    return cudaSuccess;
}

}  // namespace

TEST_CASE("element_never_written: the last column keeps the poison") {
    const int rows = 17, cols = 33;
    DeviceArray<std::int32_t> out(std::size_t(rows) * cols, "out");
    out.poison();
    element_never_written__fill(out.get(), rows, cols);
    const auto got = out.download();
    int wrong = 0;
    for (int i = 0; i < rows * cols; ++i) wrong += got[i] != i;
    CHECK(wrong == rows);
}

TEST_CASE("swapped_indices: the result is wrong where m != n") {
    CHECK(wrong_elements(swapped_indices__matmul_naive<float>, 17, 33, 29) > 0);
}

TEST_CASE("inverted_indexing: slow on a GPU, but every answer is right") {
    CHECK(wrong_elements(inverted_indexing__matmul_naive<float>, 65, 33, 17) == 0);
}

TEST_CASE("missing_syncthreads: wrong results under the default, reverse and random schedules") {
    for (const char* schedule : {"default", "reverse", "random:1"}) {
        ScheduleScope scope(schedule);
        CHECK_MESSAGE(wrong_elements(missing_syncthreads__matmul_tiled<float>, 64, 64, 64) > 0, schedule);
    }
}

TEST_CASE("missing_bounds_check: the write past c is reported with c's name, the index and the line") {
    if (!cudacpu_checking_memory()) return;  // out-of-bounds reports need AddressSanitizer
    ExpectFailure expect;
    const int m = 33, n = 33, k = 33;
    const auto a = random_values<float>(m * k, 23), b = random_values<float>(k * n, 24);
    DeviceArray<float> da(a, "a"), db(b, "b"), dc(m * n, "c");
    CHECK(error_of([&] { missing_bounds_check__matmul_tiled(da.get(), db.get(), dc.get(), m, n, k); }) ==
          cudaErrorIllegalAddress);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(d.find("wrote c[") != std::string::npos, d);
    CHECK_MESSAGE(d.find("but c has 1089 elements") != std::string::npos, d);
    CHECK_MESSAGE(d.find(file_line(planted("missing_bounds_check", "matmul_tiled.cu").c_str(), "BUG: no")) !=
                      std::string::npos,
                  d);
    CHECK_MESSAGE(d.find("of block (") != std::string::npos, d);
}

TEST_CASE("illegal_address: a write a gigabyte past c is an illegal address, not a crash") {
    ExpectFailure expect;
    const int rows = 16, cols = 16;
    DeviceArray<float> a(rows * cols, "a"), b(rows * cols, "b"), c(rows * cols, "c");
    CHECK(error_of([&] { illegal_address__add(a.get(), b.get(), c.get(), rows, cols); }) == cudaErrorIllegalAddress);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(d.find("add.cu:") != std::string::npos, d);
    // The device is lost afterwards, as on a GPU, until the sticky error is cleared.
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);
}

TEST_CASE("never_returns: the launch time limit stops it with cudaErrorLaunchTimeout and the loop's line") {
    ExpectFailure expect;
    const double before = cudacpu_launch_timeout();
    cudacpu_set_launch_timeout(0.5);
    DeviceArray<std::int32_t> out(64, "out");
    CHECK(error_of([&] { never_returns__fill(out.get(), 8, 8); }) == cudaErrorLaunchTimeout);
    cudacpu_set_launch_timeout(before);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(d.find("did not finish within 0.5 s") != std::string::npos, d);
    CHECK_MESSAGE(d.find(file_line(planted("never_returns", "fill.cu").c_str(), "BUG: nothing ever sets")) !=
                      std::string::npos,
                  d);
}
