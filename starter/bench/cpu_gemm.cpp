#include "cpu_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "dtype.h"

namespace {

using Index = std::int64_t;  // 8192 x 8192 elements overflow an int's products

// Tiles of the blocked version: a 256-float stretch of a row of c (1 KiB) and
// a 128 x 256 tile of b (128 KiB) stay in the L1 and L2 caches while 64 rows
// of a stream past them.
constexpr int kTileRows = 64, kTileDepth = 128, kTileCols = 256;

}  // namespace

void cpu_gemm_simple(const float* a, const float* b, float* c, int m, int n, int k) {
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) {
            float sum = 0;
            for (Index p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
            c[i * n + j] = sum;
        }
}

void cpu_gemm_pretransposed(const float* a, const float* b, float* c, int m, int n, int k) {
    std::vector<float> bt(static_cast<std::size_t>(Index(k) * n));
    for (Index p = 0; p < k; ++p)
        for (Index j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) {
            const float* a_row = a + i * k;
            const float* bt_row = bt.data() + j * k;
            float sum = 0;
            for (Index p = 0; p < k; ++p) sum += a_row[p] * bt_row[p];
            c[i * n + j] = sum;
        }
}

void cpu_gemm_blocked(const float* a, const float* b, float* c, int m, int n, int k) {
    std::fill(c, c + Index(m) * n, 0.0f);
    for (Index i0 = 0; i0 < m; i0 += kTileRows)
        for (Index p0 = 0; p0 < k; p0 += kTileDepth)
            for (Index j0 = 0; j0 < n; j0 += kTileCols) {
                const Index i1 = std::min<Index>(i0 + kTileRows, m), p1 = std::min<Index>(p0 + kTileDepth, k),
                            j1 = std::min<Index>(j0 + kTileCols, n);
                for (Index i = i0; i < i1; ++i)
                    for (Index p = p0; p < p1; ++p) {
                        const float a_ip = a[i * k + p];
                        const float* __restrict__ b_row = b + p * n;
                        float* __restrict__ c_row = c + i * n;
                        for (Index j = j0; j < j1; ++j) c_row[j] += a_ip * b_row[j];
                    }
            }
}

const std::vector<CpuGemm>& cpu_gemms() {
    static const std::vector<CpuGemm> all = {{"cpu-simple", cpu_gemm_simple},
                                             {"cpu-pretransposed", cpu_gemm_pretransposed},
                                             {"cpu-blocked", cpu_gemm_blocked}};
    return all;
}

std::string check_gemm_samples(const float* a, const float* b, const float* c, int m, int n, int k, Tolerance tol,
                               int samples) {
    const Index total = Index(m) * n;
    // A stride that is not a multiple of n, so the samples land in many rows
    // and columns; the last element is always checked.
    Index step = std::max<Index>(1, total / std::max(1, samples));
    if (n > 1 && step % n == 0) ++step;
    for (Index s = 0; s <= total; s += step) {
        const Index e = std::min(s, total - 1);
        const Index i = e / n, j = e % n;
        double value = 0, magnitude = 0;
        for (Index p = 0; p < k; ++p) {
            const double term = double(a[i * k + p]) * double(b[p * n + j]);
            value += term;
            magnitude += std::fabs(term);
        }
        const double bound = tolerance_bound(tol, k, unit_roundoff(DType::f32), magnitude, smallest_normal(DType::f32));
        if (!within_tolerance(c[e], value, bound)) {
            char text[160];
            std::snprintf(text, sizeof text, "c[%lld][%lld] = %.9g, expected %.9g (within %.3g)",
                          static_cast<long long>(i), static_cast<long long>(j), c[e], value, bound);
            return text;
        }
        if (e == total - 1) break;
    }
    return "";
}
