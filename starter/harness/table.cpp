#include "table.h"

#include "diagnose.h"
#include "version.h"

void print_device_header(std::FILE* out, const DeviceInfo& d, std::uint64_t seed) {
    std::fprintf(out, "harness %s on %s (sm_%d%d, %d SMs, %.0f MB L2), driver %s, runtime %s, seed %llu\n",
                 HARNESS_VERSION, d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes / 1e6,
                 cuda_version_string(d.driver_version).c_str(), cuda_version_string(d.runtime_version).c_str(),
                 static_cast<unsigned long long>(seed));
}

void print_limits(std::FILE* out, const DeviceLimits& l) {
    std::fprintf(out, "device limits: copy bandwidth %.0f GB/s (read + write, ±%.1f%%); "
                      "cuBLAS SGEMM FP32 %.0f GFLOP/s at %s (±%.1f%%); FP32 peak %.0f GFLOP/s\n",
                 l.copy_gbps, 100 * l.copy_stats.relative_ci(), l.sgemm_gflops, l.sgemm_shape.str().c_str(),
                 100 * l.sgemm_stats.relative_ci(), l.peak_fp32_gflops);
}

void print_table_header(std::FILE* out) {
    std::fprintf(out, "%-13s %-8s %-16s %-16s %11s %7s %18s %8s\n", "task", "type", "shape", "status", "median ms",
                 "±CI", "throughput", "% limit");
}

void print_case_row(std::FILE* out, const CaseResult& r) {
    std::fprintf(out, "%-13s %-8s %-16s %-16s", r.task.c_str(), dtype_name(r.dtype), r.shape.str().c_str(),
                 status_name(r.status));
    if (r.timing) {
        const auto& s = r.timing->stats;
        char tp[32], pct[16] = "-";
        std::snprintf(tp, sizeof tp, "%.0f %s", r.throughput, metric_unit(r.metric));
        if (r.percent_of_limit) std::snprintf(pct, sizeof pct, "%.1f%%", *r.percent_of_limit);
        std::fprintf(out, " %11.4f %6.1f%% %18s %8s", s.median, 100 * s.relative_ci(), tp, pct);
    }
    std::fputc('\n', out);
    if (r.implausible)
        std::fprintf(out, "    implausible: faster than this GPU can physically do the work (at least %.4f ms, set by %s)\n",
                     r.floor->seconds * 1e3, r.floor->bound == "fp32_peak" ? "its FP32 peak" : "its memory bandwidth");
    if (r.timing && r.timing->throttled_samples() > 0)
        std::fprintf(out, "    %d of %d samples were taken while the SM clock was throttled\n",
                     r.timing->throttled_samples(), static_cast<int>(r.timing->samples_ms.size()));
    if (r.status == CaseStatus::wrong || r.status == CaseStatus::error || r.status == CaseStatus::build_error) {
        std::fprintf(out, "    %s\n", r.message.c_str());
        if (!r.hint.empty()) std::fprintf(out, "    hint: %s\n", r.hint.c_str());
    }
}

std::string status_counts(int ok, int wrong, int not_implemented, int errors) {
    return std::to_string(ok) + " ok, " + std::to_string(wrong) + " wrong, " + std::to_string(not_implemented) +
           " not implemented, " + std::to_string(errors) + (errors == 1 ? " error" : " errors");
}
