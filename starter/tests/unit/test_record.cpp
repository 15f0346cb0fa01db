// The JSON records against the published schema's required fields.
#include <doctest/doctest.h>

#include <fstream>

#include "record.h"

namespace {

nlohmann::json schema_defs() {
    std::ifstream in("harness/result.schema.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in).at("$defs");
}

void check_required(const nlohmann::json& record, const nlohmann::json& def) {
    for (const auto& key : def.at("required")) {
        INFO("field " << key.get<std::string>());
        CHECK(record.contains(key.get<std::string>()));
    }
}

CaseResult timed_wrong_case() {
    CaseResult r;
    r.task = "matmul_tiled";
    r.dtype = DType::f32;
    r.shape = Shape::gemm(17, 33, 29);
    r.seed = 99;
    r.status = CaseStatus::wrong;
    r.message = "12 of 561 elements are wrong";
    r.check.elements = 561;
    r.check.wrong = 12;
    r.check.runs_checked = 1;
    r.check.has_first_wrong = true;
    r.check.first_index = 40;
    r.check.first_row = 1;
    r.check.first_col = 7;
    r.check.got = std::nan("");
    r.check.worst_ratio = INFINITY;
    r.reference = "cpu";
    TimingResult t;
    t.samples_ms = {1.0, 1.1, 0.9};
    t.stats = summarize(t.samples_ms);
    t.stop_reason = "budget";
    r.timing = t;
    r.throughput = 123.4;
    return r;
}

}  // namespace

TEST_CASE("a case record carries every field the schema requires") {
    const nlohmann::json defs = schema_defs();
    const CaseResult r = timed_wrong_case();
    const nlohmann::json j = case_record(r, *find_task(r.task), DeviceInfo{});
    check_required(j, defs.at("case"));
    check_required(j, defs.at("version"));
    check_required(j.at("check"), defs.at("check"));
    check_required(j.at("check").at("first_wrong"), defs.at("check").at("properties").at("first_wrong"));
    check_required(j.at("timing"), defs.at("timing"));
    check_required(j.at("throughput"), defs.at("throughput"));
    check_required(j.at("device"), defs.at("device"));
    CHECK(j.at("record") == "case");
    CHECK(j.at("shape") == nlohmann::json{{"m", 17}, {"n", 33}, {"k", 29}});
    CHECK(j.at("shape_text") == "17x33x29");
    CHECK(j.at("check").at("first_wrong").at("index") == 40);
}

TEST_CASE("without the device limits a case has no plausibility floor") {
    const CaseResult r = timed_wrong_case();
    CHECK(case_record(r, *find_task(r.task), DeviceInfo{}).at("plausibility").is_null());
}

TEST_CASE("with the limits the record gives the floor, what set it, and whether the time is below it") {
    CaseResult r = timed_wrong_case();
    DeviceLimits lim;
    lim.peak_fp32_gflops = 66908;
    lim.copy_gbps = 4250;
    r.flops = 2.0 * 4096 * 4096 * 4096;
    rate_plausibility(r, lim);  // median 1.0 ms, floor 1.87 ms
    const nlohmann::json j = case_record(r, *find_task(r.task), DeviceInfo{});
    check_required(j.at("plausibility"), schema_defs().at("plausibility"));
    CHECK(j.at("plausibility").at("bound") == "fp32_peak");
    CHECK(j.at("plausibility").at("floor_ms").get<double>() == doctest::Approx(1.8675).epsilon(0.001));
    CHECK(j.at("plausibility").at("implausible") == true);
    r.flops = 2.0 * 1024 * 1024 * 1024;
    rate_plausibility(r, lim);
    CHECK_FALSE(r.implausible);
}

TEST_CASE("per-sample clocks and throttling are in the timing record") {
    CaseResult r = timed_wrong_case();
    r.timing->sm_mhz = {1980, -1, 1755};
    r.timing->throttled = {false, false, true};
    const nlohmann::json t = case_record(r, *find_task(r.task), DeviceInfo{}).at("timing");
    CHECK(t.at("sm_mhz") == nlohmann::json{1980, nullptr, 1755});
    CHECK(t.at("throttled") == nlohmann::json{false, false, true});
    CHECK(t.at("throttled_samples") == 1);
}

TEST_CASE("the mean error and its limit are in the check record of a matmul, null elsewhere") {
    CaseResult r = timed_wrong_case();
    r.check.mean_error = 56;
    r.check.mean_error_limit = 12.1;
    const nlohmann::json c = case_record(r, *find_task(r.task), DeviceInfo{}).at("check");
    CHECK(c.at("mean_error") == 56);
    CHECK(c.at("mean_error_limit") == 12.1);
    CHECK(c.at("tolerance").at("mean_c") == 12);
    r.check.mean_error_limit = 0;
    CHECK(case_record(r, *find_task(r.task), DeviceInfo{}).at("check").at("mean_error").is_null());
}

TEST_CASE("NaN and infinity become null, since JSON has neither") {
    const CaseResult r = timed_wrong_case();
    const nlohmann::json j = case_record(r, *find_task(r.task), DeviceInfo{});
    CHECK(j.at("check").at("first_wrong").at("got").is_null());
    CHECK(j.at("check").at("worst_error_ratio").is_null());
}

TEST_CASE("a case that was never checked has a null check") {
    CaseResult r;
    r.task = "dot";
    r.shape = Shape::vector(10);
    r.status = CaseStatus::not_implemented;
    const nlohmann::json j = case_record(r, *find_task("dot"), DeviceInfo{});
    CHECK(j.at("check").is_null());
    CHECK(j.at("timing").is_null());
    CHECK(j.at("status") == "not_implemented");
}

TEST_CASE("a limits record carries every field the schema requires") {
    const nlohmann::json j = limits_record(DeviceLimits{}, DeviceInfo{});
    check_required(j, schema_defs().at("limits"));
    CHECK(j.at("sgemm_shape") == "4096x4096x4096");
}

TEST_CASE("the registry JSON lists every task with its contract") {
    const nlohmann::json j = registry_json();
    REQUIRE(j.at("tasks").size() == all_tasks().size());
    const auto& mm = j.at("tasks").at(3);
    CHECK(mm.at("id") == "matmul_naive");
    CHECK(mm.at("dtypes") == nlohmann::json{"float32", "float64", "int32"});
    CHECK(mm.at("shape_kind") == "gemm");
    CHECK(mm.at("inputs") == nlohmann::json{"a", "b"});
}
