#include "cpu_bench.h"

#include <chrono>
#include <fstream>
#include <map>
#include <optional>

#include "counter_rng.h"
#include "cpu_gemm.h"
#include "stats.h"
#include "sweep.h"

namespace {

// Enough runs for a median, but no more than a fraction of a second of them.
constexpr int kRuns = 3;
constexpr double kRepeatSeconds = 0.5;
constexpr int kCheckedElements = 256;

std::vector<float> random_matrix(std::size_t elements, std::uint64_t key) {
    std::vector<float> v(elements);
    for (std::size_t i = 0; i < elements; ++i) v[i] = rng_value<float>(key, i, Distribution::signed_unit, 0);
    return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string host_cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
        }
    return "";
}

void bench_cpu_gemms(const std::vector<Shape>& shapes, const CpuBenchOptions& o, BenchReport& report) {
    const std::string cpu = host_cpu_name();
    const std::string where = "1 thread" + (cpu.empty() ? std::string() : " of " + cpu);
    std::map<std::string, std::optional<MeasuredRun>> last;  // per implementation
    for (const Shape& shape : shapes) {
        const int m = static_cast<int>(shape.m()), n = static_cast<int>(shape.n()), k = static_cast<int>(shape.k());
        const double flops = 2.0 * m * n * k;
        std::vector<float> a, b, c;  // made on first use: a size every implementation skips needs none
        for (const CpuGemm& g : cpu_gemms()) {
            BenchRow row{"matmul", g.impl, "float32", shape.str(), shape_size(shape), {}, {}, "GFLOP/s", ""};
            if (auto why = skip_reason(last[g.impl], flops, o.max_run_seconds * 1e3, "--cpu-seconds")) {
                row.note = *why;
                report.add(row);
                continue;
            }
            if (a.empty()) {
                a = random_matrix(std::size_t(m) * k, rng_key(o.seed, 0));
                b = random_matrix(std::size_t(k) * n, rng_key(o.seed, 1));
                c.resize(std::size_t(m) * n);
            }
            std::vector<double> runs_ms;
            const auto t0 = std::chrono::steady_clock::now();
            while (runs_ms.empty() || (runs_ms.size() < kRuns && seconds_since(t0) < kRepeatSeconds)) {
                const auto start = std::chrono::steady_clock::now();
                g.run(a.data(), b.data(), c.data(), m, n, k);
                runs_ms.push_back(seconds_since(start) * 1e3);
                if (runs_ms.size() == 1) {
                    const std::string wrong =
                        check_gemm_samples(a.data(), b.data(), c.data(), m, n, k, o.tolerance, kCheckedElements);
                    if (!wrong.empty()) {
                        row.note = "wrong result, not timed: " + wrong;
                        break;
                    }
                }
            }
            if (row.note.empty()) {
                const double ms = summarize(runs_ms).median;
                row.ms = ms;
                row.throughput = flops / (ms * 1e-3) / 1e9;
                row.note = where;
                last[g.impl] = MeasuredRun{shape_size(shape), ms, flops};
            }
            report.add(row);
        }
    }
}
