// Runs one case — one (task, element type, shape) — on the GPU: makes the
// inputs, computes the float64 reference, calls the student's launcher with
// freshly placed inputs and a poisoned output (placement.h), checks the result
// and that the inputs are unchanged after every call, and optionally times it
// (checking every timed run's output too).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check_result.h"
#include "device_info.h"
#include "device_limits.h"
#include "npy.h"
#include "registry.h"
#include "timing.h"

// build_error: the task's file did not compile or link, or does not define this
// element type's launcher (fallback_launchers.cpp); the message says which.
enum class CaseStatus { ok, wrong, not_implemented, build_error, error };
const char* status_name(CaseStatus s);  // "ok", "wrong", "not_implemented", "build_error", "error"

// A stored reference case from data/: inputs and the expected output.
struct DataCase {
    std::string label;  // path of the case, for messages and JSON
    std::uint64_t seed = 0;
    std::vector<NpyArray> inputs;
    NpyArray expected;
};

// Where the float64 reference is computed: by size (auto), or forced, which
// lets the tests check the CPU and GPU references against each other.
enum class ReferencePlace { automatic, cpu, gpu };

struct CaseOptions {
    std::uint64_t seed = 0;
    ReferencePlace reference = ReferencePlace::automatic;
    int check_runs = 1;  // untimed runs whose output is verified before timing
    bool time = false;
    TimingOptions timing;
    // Every input and the output alone in an allocation of exactly its size,
    // nothing after it, every call: compute-sanitizer's runs (placement.h).
    bool fixed_placement = false;
};

struct CaseResult {
    std::string task;
    DType dtype = DType::f32;
    Shape shape;
    std::string source = "random";  // or "data:<path>"
    std::uint64_t seed = 0;
    CaseStatus status = CaseStatus::error;
    std::string message;  // one line: what went wrong ("" when ok)
    std::string hint;     // what to look at ("" when nothing to add)
    CheckResult check;
    std::string reference;  // "cpu" or "gpu": where the float64 reference was computed
    std::optional<TimingResult> timing;
    double flops = 0, bytes = 0;
    Metric metric = Metric::gbps;
    double throughput = 0;                // GFLOP/s or GB/s at the median time
    std::optional<double> percent_of_limit;
    std::optional<PlausibilityFloor> floor;  // the fastest honest time here, when the limits are known
    bool implausible = false;                // the median time is below the floor
    int sm_clock_mhz_before = -1, sm_clock_mhz_after = -1;
    std::string clock_limit_reasons;  // NVML's reasons the clock is below maximum, after timing
    bool context_lost = false;        // a sticky GPU fault: this process can run no more cases
};

// One case kept on the GPU between steps, so `harness --serve` can check a
// case and then time it a few samples at a time while the grader alternates
// with the solution's harness.
class CaseRun {
public:
    CaseRun(const Task& task, DType dtype, const Shape& shape, const CaseOptions& options, const DeviceInfo& device,
            const DataCase* data = nullptr);
    ~CaseRun();
    CaseRun(const CaseRun&) = delete;
    CaseRun& operator=(const CaseRun&) = delete;

    // Makes the inputs and the float64 reference, then the check runs.
    const CaseResult& check();
    // After a passing check: the remaining warm-up runs (once per case), then
    // timed samples under `options`, every one verified; samples accumulate
    // over calls. A wrong or failed run changes the status.
    const CaseResult& time(const TimingOptions& options, L2Flusher& flusher, const DeviceLimits* limits);
    const CaseResult& result() const;
    bool ready_to_time() const;  // the check passed and no timed run failed

private:
    struct State;
    std::unique_ptr<State> s_;
};

// Fills in the plausibility floor from the device's limits, and whether the
// median time (if timed) is below it.
void rate_plausibility(CaseResult& r, const DeviceLimits& limits);

// Runs a case start to end; never throws for anything the student's code does.
CaseResult run_case(const Task& task, DType dtype, const Shape& shape, const CaseOptions& options,
                    const DeviceInfo& device, const DeviceLimits* limits, L2Flusher& flusher,
                    const DataCase* data = nullptr);

// The result for a case the watchdog stopped after `seconds` without an answer.
CaseResult timeout_result(const Task& task, DType dtype, const Shape& shape, std::uint64_t seed, double seconds);

// Reads a stored case; throws DataFileError naming the file on any problem.
DataCase load_data_case(const std::string& data_dir, const std::string& relative_dir, const Task& task, DType dtype,
                        const Shape& shape, std::uint64_t seed);
