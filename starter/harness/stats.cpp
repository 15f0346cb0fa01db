#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

SampleStats summarize(std::vector<double> x) {
    SampleStats s;
    s.samples = static_cast<int>(x.size());
    if (x.empty()) return s;
    std::sort(x.begin(), x.end());
    const std::size_t n = x.size();
    s.min = x.front();
    s.median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    s.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
    double ss = 0;
    for (double v : x) ss += (v - s.mean) * (v - s.mean);
    s.stddev = n > 1 ? std::sqrt(ss / (n - 1)) : 0;

    // 1-based ranks j <= k bracketing the median with >= 95% coverage.
    const double spread = 1.96 * std::sqrt(static_cast<double>(n)) / 2;
    long j = static_cast<long>(std::floor(n / 2.0 - spread));
    long k = static_cast<long>(std::ceil(1 + n / 2.0 + spread));
    if (n < 6 || j < 1) j = 1;
    if (n < 6 || k > static_cast<long>(n)) k = static_cast<long>(n);
    s.ci95_half_width = (x[k - 1] - x[j - 1]) / 2;
    return s;
}
