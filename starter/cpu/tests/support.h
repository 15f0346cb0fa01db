// Helpers the CPU backend's tests share: device arrays that name themselves
// for out-of-bounds reports, random inputs, float64 references, and a scope
// that sets a schedule or recovers from a deliberate kernel fault.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "doctest/doctest.h"

template <class T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t n, const char* name = nullptr) : n_(n) {
        REQUIRE(cudaMalloc(&ptr_, (n ? n : 1) * sizeof(T)) == cudaSuccess);
        if (name) cudacpu_name_allocation(ptr_, name, n, sizeof(T));
    }
    DeviceArray(const std::vector<T>& host, const char* name = nullptr) : DeviceArray(host.size(), name) { upload(host); }
    ~DeviceArray() { cudaFree(ptr_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    T* get() const { return ptr_; }
    std::size_t size() const { return n_; }
    void upload(const std::vector<T>& host) {
        REQUIRE(host.size() == n_);
        REQUIRE(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    }
    std::vector<T> download() const {
        std::vector<T> host(n_);
        REQUIRE(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
        return host;
    }
    // Fills with a pattern no kernel writes by chance (NaN for floats).
    void poison() { REQUIRE(cudaMemset(ptr_, 0xFF, n_ * sizeof(T)) == cudaSuccess); }

private:
    T* ptr_ = nullptr;
    std::size_t n_;
};

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<T> v(n);
    if constexpr (std::is_floating_point<T>::value) {
        std::uniform_real_distribution<double> d(-1.0, 1.0);
        for (T& x : v) x = static_cast<T>(d(gen));
    } else {
        std::uniform_int_distribution<int> d(-5, 5);
        for (T& x : v) x = static_cast<T>(d(gen));
    }
    return v;
}

// c = a b in float64, with the magnitude sum |a||b| per element for tolerances.
template <class T>
void matmul_reference(const std::vector<T>& a, const std::vector<T>& b, int m, int n, int k, std::vector<double>* c,
                      std::vector<double>* magnitude) {
    c->assign(static_cast<std::size_t>(m) * n, 0.0);
    magnitude->assign(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p) {
            const double x = a[static_cast<std::size_t>(i) * k + p];
            for (int j = 0; j < n; ++j) {
                const double y = b[static_cast<std::size_t>(p) * n + j];
                (*c)[static_cast<std::size_t>(i) * n + j] += x * y;
                (*magnitude)[static_cast<std::size_t>(i) * n + j] += std::fabs(x * y);
            }
        }
}

// How many elements differ from the reference by more than the type allows.
template <class T>
std::size_t count_wrong(const std::vector<T>& got, const std::vector<double>& want, const std::vector<double>& magnitude) {
    const double eps = std::is_same<T, float>::value ? 1e-5 : (std::is_same<T, double>::value ? 1e-13 : 0.0);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = static_cast<double>(got[i]);
        if (!(std::fabs(g - want[i]) <= eps * (magnitude[i] + 1.0))) ++wrong;
    }
    return wrong;
}

// Runs the rest of a test under a schedule, then restores the default.
struct ScheduleScope {
    explicit ScheduleScope(const char* spec) { REQUIRE(cudacpu_set_schedule(spec) == 0); }
    ~ScheduleScope() { cudacpu_set_schedule("default"); }
};

// For tests that make a kernel fail on purpose: quiet diagnostics, and the
// device usable again afterwards.
struct ExpectFailure {
    ExpectFailure() {
        // CUDACPU_TEST_SHOW=1 shows the reports the tests provoke.
        if (!std::getenv("CUDACPU_TEST_SHOW")) cudacpu_set_quiet(1);
        cudacpu_clear_diagnostic();
    }
    ~ExpectFailure() {
        cudacpu_clear_sticky_error();
        (void)cudaGetLastError();
        cudacpu_set_quiet(0);
    }
    std::string diagnostic() const { return cudacpu_last_diagnostic(); }
};

// The line of the first line of `file` holding `mark` (a comment such as
// "mark:early-return"), so that tests can check the file:line in messages.
inline int line_of(const char* file, const char* mark) {
    std::ifstream in(file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (line.find(mark) != std::string::npos) return n;
    FAIL("no line marked " << mark << " in " << file);
    return -1;
}

// "file.cu:LINE" as the runtime prints it (no directory).
inline std::string file_line(const char* file, const char* mark) {
    const char* slash = std::strrchr(file, '/');
    return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line_of(file, mark));
}
