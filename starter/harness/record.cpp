#include "record.h"

#include <cmath>

#include "version.h"

namespace {

using nlohmann::json;

// JSON has no NaN or infinity: those become null.
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json shape_json(const Shape& s) {
    switch (s.kind) {
        case ShapeKind::matrix: return {{"rows", s.rows()}, {"cols", s.cols()}};
        case ShapeKind::gemm: return {{"m", s.m()}, {"n", s.n()}, {"k", s.k()}};
        case ShapeKind::vector: return {{"n", s.n()}};
    }
    return json::object();
}

json common(const char* kind) {
    return {{"record", kind}, {"schema_version", HARNESS_SCHEMA_VERSION}, {"harness_version", HARNESS_VERSION}};
}

// Clock readings per sample; unknown ones (-1) become null.
json sm_mhz_json(const std::vector<int>& mhz) {
    json a = json::array();
    for (int v : mhz) a.push_back(v > 0 ? json(v) : json(nullptr));
    return a;
}

json shapes_json(const std::vector<Shape>& shapes) {
    json a = json::array();
    for (const Shape& s : shapes) a.push_back(s.str());
    return a;
}

}  // namespace

json device_json(const DeviceInfo& d) {
    return {{"name", d.name},
            {"index", d.index},
            {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
            {"sm_count", d.sm_count},
            {"l2_bytes", d.l2_bytes},
            {"memory_bytes", d.memory_bytes},
            {"pci_bus_id", d.pci_bus_id},
            {"driver_version", cuda_version_string(d.driver_version)},
            {"runtime_version", cuda_version_string(d.runtime_version)},
            {"max_sm_clock_mhz", [&] { int v = max_sm_clock_mhz(d); return v > 0 ? json(v) : json(nullptr); }()}};
}

json case_record(const CaseResult& r, const Task& task, const DeviceInfo& d) {
    json j = common("case");
    j["task"] = r.task;
    j["dtype"] = dtype_name(r.dtype);
    j["shape"] = shape_json(r.shape);
    j["shape_text"] = r.shape.str();
    j["source"] = r.source;
    j["seed"] = r.seed;
    j["status"] = status_name(r.status);
    j["message"] = r.message;
    j["hint"] = r.hint;

    const CheckResult& c = r.check;
    json first = nullptr;
    if (c.has_first_wrong)
        first = {{"index", c.first_index},     {"row", c.first_row},         {"col", c.first_col},
                 {"expected", c.expected},     {"got", c.first_unwritten ? json(nullptr) : number_or_null(c.got)},
                 {"unwritten", c.first_unwritten}, {"bound", c.bound}};
    json modified = c.modified_inputs;
    // No check happened when the task is not implemented or failed before its output was compared.
    j["check"] = c.runs_checked == 0 ? json(nullptr) : json{{"elements", c.elements},
                  {"wrong", c.wrong},
                  {"unwritten", c.unwritten},
                  {"nonfinite", c.nonfinite},
                  {"first_wrong", first},
                  {"worst_error_ratio", number_or_null(c.worst_ratio)},
                  {"mean_error", c.mean_error_limit > 0 ? number_or_null(c.mean_error) : json(nullptr)},
                  {"mean_error_limit", c.mean_error_limit > 0 ? json(c.mean_error_limit) : json(nullptr)},
                  {"inputs_unchanged", c.modified_inputs.empty()},
                  {"modified_inputs", modified},
                  {"written_past_end", c.written_past_end},
                  {"runs_checked", c.runs_checked},
                  {"runs_wrong", c.runs_wrong},
                  {"runs_differ", c.runs_differ},
                  {"reference", r.reference.empty() ? json(nullptr) : json(r.reference)},
                  {"tolerance",
                   {{"model", tolerance_model_name(task.tolerance.model)},
                    {"c0", task.tolerance.c0},
                    {"mean_c", task.tolerance.mean_c > 0 ? json(task.tolerance.mean_c) : json(nullptr)},
                    {"k", task.terms_summed(r.shape)},
                    {"u", unit_roundoff(r.dtype)}}}};

    j["timing"] = nullptr;
    j["throughput"] = nullptr;
    if (r.timing) {
        const SampleStats& s = r.timing->stats;
        j["timing"] = {{"samples", s.samples},
                       {"median_ms", s.median},
                       {"min_ms", s.min},
                       {"mean_ms", s.mean},
                       {"stddev_ms", s.stddev},
                       {"ci95_half_width_ms", s.ci95_half_width},
                       {"ci95_relative", s.relative_ci()},
                       {"converged", r.timing->converged},
                       {"stop_reason", r.timing->stop_reason},
                       {"wall_seconds", r.timing->wall_seconds},
                       {"samples_ms", r.timing->samples_ms},
                       {"sm_mhz", sm_mhz_json(r.timing->sm_mhz)},
                       {"throttled", r.timing->throttled},
                       {"throttled_samples", r.timing->throttled_samples()},
                       {"outside_stream_samples", r.timing->outside_stream_samples}};
        j["throughput"] = {{"value", r.throughput},
                           {"unit", metric_unit(r.metric)},
                           {"flops", r.flops},
                           {"bytes", r.bytes},
                           {"limit", r.metric == Metric::gflops ? "cublas_sgemm_fp32" : "copy_bandwidth"},
                           {"percent_of_limit", r.percent_of_limit ? json(*r.percent_of_limit) : json(nullptr)}};
    }
    j["plausibility"] = r.floor ? json{{"floor_ms", r.floor->seconds * 1e3},
                                       {"bound", r.floor->bound},
                                       {"implausible", r.implausible}}
                                : json(nullptr);
    j["clocks"] = {{"sm_mhz_before", r.sm_clock_mhz_before > 0 ? json(r.sm_clock_mhz_before) : json(nullptr)},
                   {"sm_mhz_after", r.sm_clock_mhz_after > 0 ? json(r.sm_clock_mhz_after) : json(nullptr)},
                   {"limit_reasons", r.clock_limit_reasons}};
    j["work"] = {{"flops", r.flops}, {"bytes", r.bytes}, {"unit", metric_unit(r.metric)}};
    j["device"] = device_json(d);
    return j;
}

json limits_record(const DeviceLimits& l, const DeviceInfo& d) {
    json j = common("limits");
    j["copy_bandwidth_gbps"] = l.copy_gbps;
    j["copy_bytes"] = l.copy_bytes;
    j["copy_ci95_relative"] = l.copy_stats.relative_ci();
    j["sgemm_fp32_gflops"] = l.sgemm_gflops;
    j["sgemm_shape"] = l.sgemm_shape.str();
    j["sgemm_ci95_relative"] = l.sgemm_stats.relative_ci();
    j["peak_fp32_gflops"] = l.peak_fp32_gflops;
    j["peak_sm_clock_mhz"] = l.peak_sm_clock_mhz;
    j["l2_bytes"] = l.l2_bytes;
    j["plausibility_margins"] = {{"fp32_peak", kFlopMargin}, {"bandwidth", kBandwidthMargin}};
    const int clock = current_sm_clock_mhz(d);
    j["sm_clock_mhz"] = clock > 0 ? json(clock) : json(nullptr);
    j["device"] = device_json(d);
    return j;
}

json shape_sets_json(const ShapeSets& sets) {
    json j = json::object();
    for (const auto& [name, shapes] : named_shape_sets(sets)) j[name] = shapes_json(*shapes);
    return j;
}

json registry_json() {
    json tasks = json::array();
    for (const Task& t : all_tasks()) {
        json dtypes = json::array();
        for (DType d : t.dtypes) dtypes.push_back(dtype_name(d));
        tasks.push_back({{"id", t.id},
                         {"summary", t.summary},
                         {"file", t.file},
                         {"shape_kind", shape_kind_name(t.shape_kind)},
                         {"dtypes", dtypes},
                         {"inputs", t.input_names},
                         {"distribution", t.distribution == Distribution::signed_unit ? "signed_unit" : "positive_unit"},
                         {"tolerance", {{"model", tolerance_model_name(t.tolerance.model)},
                                        {"c0", t.tolerance.c0},
                                        {"mean_c", t.tolerance.mean_c > 0 ? json(t.tolerance.mean_c) : json(nullptr)}}},
                         {"int_range", int_range_name(t.int_range)},
                         {"metric", metric_unit(t.metric)},
                         {"shape_sets", shape_sets_json(t.shapes)}});
    }
    json j = common("registry");
    j["statuses"] = {"ok", "wrong", "not_implemented", "build_error", "error"};
    j["tasks"] = tasks;
    return j;
}
