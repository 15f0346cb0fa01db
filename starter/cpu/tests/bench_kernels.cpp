// Times the solution's kernels on the CPU backend at the shapes the report
// quotes, after one untimed warm-up call each (which also checks a few
// elements, so a broken build cannot post a fast time).
//
//   python3 starter/cpu/tests/bench.py            builds this with and without ASan and runs both
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "tasks.h"

namespace {

double cpu_now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

// The CPU time of the last call timed: all workers together. On a machine
// other programs also load, it says more than the wall time.
double g_cpu_seconds = 0;

double seconds(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    f();
    cudaDeviceSynchronize();
    g_cpu_seconds = cpu_now() - c0;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
T* device(std::size_t n, T value) {
    T* p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) {
        std::fprintf(stderr, "cudaMalloc failed\n");
        std::exit(1);
    }
    std::vector<T> h(n, value);
    cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    return p;
}

template <class T>
T read(const T* p, std::size_t i) {
    T v;
    cudaMemcpy(&v, p + i, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

void report(const char* what, double first, double timed, bool ok) {
    std::printf("%-38s %8.3f s wall %8.3f s CPU  (first call %.3f s)%s\n", what, timed, g_cpu_seconds, first,
                ok ? "" : "  WRONG RESULT");
}

}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    auto wanted = [&](const char* name) { return only.empty() || only == name; };
    std::printf("%s, %d worker threads, %s\n", cudacpu_checking_memory() ? "AddressSanitizer" : "no AddressSanitizer",
                cudacpu_workers(), cudacpu_schedule());

    if (wanted("matmul_tiled")) {
        const int n = 1024;
        float *a = device<float>(std::size_t(n) * n, 1.0f), *b = device<float>(std::size_t(n) * n, 2.0f),
              *c = device<float>(std::size_t(n) * n, 0.0f);
        const double first = seconds([&] { matmul_tiled(a, b, c, n, n, n); });
        const double t = seconds([&] { matmul_tiled(a, b, c, n, n, n); });
        report("matmul_tiled 1024x1024x1024 float", first, t, read(c, 12345) == 2.0f * n);
        cudaFree(a), cudaFree(b), cudaFree(c);
    }
    if (wanted("matmul_naive")) {
        const int m = 515, nn = 509, k = 521;
        float *a = device<float>(std::size_t(m) * k, 1.0f), *b = device<float>(std::size_t(k) * nn, 2.0f),
              *c = device<float>(std::size_t(m) * nn, 0.0f);
        const double first = seconds([&] { matmul_naive(a, b, c, m, nn, k); });
        const double t = seconds([&] { matmul_naive(a, b, c, m, nn, k); });
        report("matmul_naive 515x509x521 float", first, t, read(c, std::size_t(m) * nn - 1) == 2.0f * k);
        cudaFree(a), cudaFree(b), cudaFree(c);
    }
    if (wanted("add")) {
        const int n = 2048;
        float *a = device<float>(std::size_t(n) * n, 1.0f), *b = device<float>(std::size_t(n) * n, 2.0f),
              *c = device<float>(std::size_t(n) * n, 0.0f);
        const double first = seconds([&] { add(a, b, c, n, n); });
        const double t = seconds([&] { add(a, b, c, n, n); });
        report("add 2048x2048 float", first, t, read(c, 777) == 3.0f);
        cudaFree(a), cudaFree(b), cudaFree(c);
    }
    if (wanted("transpose")) {
        const int n = 2048;
        float *a = device<float>(std::size_t(n) * n, 1.0f), *b = device<float>(std::size_t(n) * n, 0.0f);
        const double first = seconds([&] { transpose(a, b, n, n); });
        const double t = seconds([&] { transpose(a, b, n, n); });
        report("transpose 2048x2048 float", first, t, read(b, 4242) == 1.0f);
        cudaFree(a), cudaFree(b);
    }
    if (wanted("dot")) {
        const int n = 1 << 24;
        float *x = device<float>(n, 1.0f), *y = device<float>(n, 0.5f), *r = device<float>(1, 0.0f);
        const double first = seconds([&] { dot(x, y, r, n); });
        const double t = seconds([&] { dot(x, y, r, n); });
        report("dot 2^24 float", first, t, read(r, 0) == 0.5f * n);
        cudaFree(x), cudaFree(y), cudaFree(r);
    }
    if (wanted("fill")) {
        const int n = 4096;
        std::int32_t* out = device<std::int32_t>(std::size_t(n) * n, -1);
        const double first = seconds([&] { fill(out, n, n); });
        const double t = seconds([&] { fill(out, n, n); });
        report("fill 4096x4096 int32", first, t, read(out, std::size_t(n) * n - 1) == n * n - 1);
        cudaFree(out);
    }
    return 0;
}
