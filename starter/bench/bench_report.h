// What `make bench` measured, and bench.json, the file it is written to
// (bench.schema.json is the same contract as JSON Schema; plot_bench.py and
// other tools read it).
//
//   {"device": {"name", "sm_clock_mhz", "copy_gbps", "cublas_fp32_gflops"},
//    "date": "2026-11-21T10:59:00Z", "label": "student" | "solution",
//    "rows": [{"task", "impl", "dtype", "shape", "size", "ms", "throughput", "unit", "note"}],
//    "transfers": [{"memory", "direction", "bytes", "gbps"}]}
//
// A row without a measurement (not implemented, wrong, skipped as too slow,
// not run after a crash) has "ms" and "throughput" null and says why in "note".
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct BenchRow {
    std::string task;   // a registry task, or "matmul" for cuBLAS and the CPU references
    std::string impl;   // "student", "solution", "cublas", "copy", "cpu-simple", "cpu-pretransposed",
                        // "cpu-blocked", "naive-inverted"
    std::string dtype;  // "float32", ...
    std::string shape;  // "4096x4096x4096"
    std::int64_t size = 0;
    std::optional<double> ms;          // median of one run
    std::optional<double> throughput;  // at that median
    std::string unit;                  // "GFLOP/s" or "GB/s"
    std::string note;                  // why there is no measurement, or what to know about it
};

struct TransferRow {
    std::string memory;     // "pageable" or "pinned"
    std::string direction;  // "host-to-device" or "device-to-host"
    std::size_t bytes = 0;
    double gbps = 0;
};

struct BenchDevice {
    std::string name;
    int sm_clock_mhz = -1;  // -1: NVML could not read it (written as null)
    double copy_gbps = 0;
    double cublas_fp32_gflops = 0;
};

// Collects the rows and writes bench.json. Safe to write from the watchdog's
// thread while the main thread is stuck in a kernel that never returns.
class BenchReport {
public:
    BenchReport(std::string path, std::string label, std::string date, std::FILE* human);

    void set_device(const BenchDevice& d);
    void add(const BenchRow& row);  // also prints it
    void add(const TransferRow& t);
    const std::string& label() const { return label_; }
    // Writes the file whole (a temporary file renamed over it), so a run that
    // stops midway never leaves half a file. Throws std::runtime_error.
    void write() const;

private:
    mutable std::mutex mu_;
    std::string path_, label_, date_;
    std::FILE* human_;
    BenchDevice device_;
    std::vector<BenchRow> rows_;
    std::vector<TransferRow> transfers_;
};

// "2026-11-21T10:59:00Z": now, in UTC.
std::string utc_now_iso();
