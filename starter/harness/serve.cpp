#include "serve.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend_budget.h"
#include "case_runner.h"
#include "record.h"
#include "version.h"

namespace {

using nlohmann::json;

struct Session {
    const DeviceInfo& device;
    L2Flusher flusher;
    std::unique_ptr<DeviceLimits> limits;
    std::unique_ptr<CaseRun> run;
    const Task* task = nullptr;
};

struct BadRequest : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename T>
T field(const json& req, const char* name, T fallback) {
    return req.contains(name) ? req.at(name).get<T>() : fallback;
}

json check(Session& s, const json& req) {
    const std::string id = req.at("task").get<std::string>();
    s.task = find_task(id);
    if (!s.task) throw BadRequest("unknown task '" + id + "'");
    DType dtype;
    if (!parse_dtype(req.at("dtype").get<std::string>(), &dtype) ||
        std::find(s.task->dtypes.begin(), s.task->dtypes.end(), dtype) == s.task->dtypes.end())
        throw BadRequest("task " + id + " has no element type " + req.at("dtype").dump());
    Shape shape;
    std::string why;
    if (!parse_shape(req.at("shape").get<std::string>(), s.task->shape_kind, &shape, &why)) throw BadRequest(why);
    s.run.reset();  // one case at a time: free the last one's memory first
    if (!runs_on_this_backend(shape))  // (the CPU backend's per-case budget): nothing runs, no case record
        return {{"op", "check"},          {"status", "gpu_only"},   {"message", gpu_only_message(shape)},
                {"hint", ""},             {"ready_to_time", false}, {"context_lost", false}};
    CaseOptions o;
    o.seed = req.at("seed").get<std::uint64_t>();
    o.check_runs = field(req, "check_runs", 2);
    o.fixed_placement = field(req, "fixed_placement", false);
    s.run = std::make_unique<CaseRun>(*s.task, dtype, shape, o, s.device);
    CaseResult checked = s.run->check();
    // With the limits measured (the grader asks the solution's process), the
    // reply carries the case's plausibility floor.
    if (s.limits) rate_plausibility(checked, *s.limits);
    json reply = case_record(checked, *s.task, s.device);
    reply["op"] = "check";
    reply["ready_to_time"] = s.run->ready_to_time();
    reply["context_lost"] = s.run->result().context_lost;
    return reply;
}

json time(Session& s, const json& req) {
    if (!s.run || !s.run->ready_to_time()) throw BadRequest("no checked, passing case to time: send check first");
    TimingOptions o;
    o.warmup_runs = field(req, "warmup", 2);
    o.min_samples = o.max_samples = field(req, "samples", 1);
    o.target_relative_ci = 0;   // exactly `samples`: the grader decides when to stop
    o.budget_seconds = 1e9;
    const std::size_t before = s.run->result().timing ? s.run->result().timing->samples_ms.size() : 0;
    const CaseResult& r = s.run->time(o, s.flusher, nullptr);
    json reply = {{"op", "time"}, {"status", status_name(r.status)}, {"message", r.message}, {"hint", r.hint}};
    std::vector<double> fresh;
    json fresh_mhz = json::array(), fresh_throttled = json::array();
    if (r.timing) {
        const TimingResult& t = *r.timing;
        fresh.assign(t.samples_ms.begin() + before, t.samples_ms.end());
        for (std::size_t i = before; i < t.sm_mhz.size(); ++i) {
            fresh_mhz.push_back(t.sm_mhz[i] > 0 ? json(t.sm_mhz[i]) : json(nullptr));
            fresh_throttled.push_back(static_cast<bool>(t.throttled[i]));
        }
    }
    reply["samples_ms"] = fresh;
    reply["samples_sm_mhz"] = fresh_mhz;          // the SM clock right after each sample
    reply["samples_throttled"] = fresh_throttled;  // each sample taken while the clock was throttled
    reply["sm_mhz"] = r.sm_clock_mhz_after > 0 ? json(r.sm_clock_mhz_after) : json(nullptr);
    reply["clock_limit_reasons"] = r.clock_limit_reasons;
    reply["context_lost"] = r.context_lost;
    if (r.status != CaseStatus::ok) reply["record"] = case_record(r, *s.task, s.device);
    return reply;
}

}  // namespace

int serve(std::istream& in, std::FILE* out, const DeviceInfo& device) {
    Session s{device, {}, nullptr, nullptr};
    std::string line;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        json reply;
        json nonce;  // echoed in the reply: the grader rejects a reply that lacks its request's nonce
        bool lost = false;
        try {
            json req = json::parse(line);
            if (req.is_object() && req.contains("nonce")) {
                nonce = req["nonce"];
                req.erase("nonce");
            }
            std::fill(line.begin(), line.end(), ' ');  // no copy of the nonce left for code under test to find
            const std::string op = req.at("op").get<std::string>();
            if (op == "quit") return 0;
            if (op == "hello") {
                reply = {{"op", "hello"},
                         {"harness_version", HARNESS_VERSION},
                         {"schema_version", HARNESS_SCHEMA_VERSION},
                         {"device", device_json(device)}};
            } else if (op == "limits") {
                if (!s.limits) s.limits = std::make_unique<DeviceLimits>(measure_limits(TimingOptions{}));
                reply = limits_record(*s.limits, device);
                reply["op"] = "limits";
            } else if (op == "check") {
                reply = check(s, req);
                lost = reply.at("context_lost").get<bool>();
            } else if (op == "time") {
                reply = time(s, req);
                lost = reply.at("context_lost").get<bool>();
            } else if (op == "release") {
                s.run.reset();
                reply = {{"op", "release"}};
            } else if (op == "memory") {
                // The device's free and total memory as this process sees it: the grader asks the
                // solution's process, between submissions, whether the last one's memory came back.
                std::size_t free_bytes = 0, total_bytes = 0;
                const cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);
                if (err != cudaSuccess) throw std::runtime_error(std::string("cudaMemGetInfo: ") + cudaGetErrorString(err));
                reply = {{"op", "memory"}, {"free_bytes", free_bytes}, {"total_bytes", total_bytes}};
            } else {
                throw BadRequest("unknown op '" + op + "' (hello, limits, check, time, release, memory, quit)");
            }
        } catch (const json::exception& e) {
            reply = {{"op", "error"}, {"error", std::string("bad request: ") + e.what()}};
        } catch (const BadRequest& e) {
            reply = {{"op", "error"}, {"error", e.what()}};
        } catch (const std::exception& e) {  // the harness's own failure, e.g. out of memory for the case
            reply = {{"op", "error"}, {"error", e.what()}};
        }
        if (!nonce.is_null()) reply["nonce"] = nonce;
        const std::string text = reply.dump() + "\n";
        std::fwrite(text.data(), 1, text.size(), out);
        std::fflush(out);
        if (lost) return 3;  // nothing more can run in this process
    }
    return 0;
}
