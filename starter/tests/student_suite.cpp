// The student suite: `make test` (all tasks) or `make test TASK=matmul_tiled`.
//
// For every task in the harness's registry, every element type it is graded
// on and every shape of its test set, the suite runs your launcher on fresh
// random inputs (the seed is printed, so a failure can be repeated with
// `make test SEED=...`), checks the result against a float64 reference, runs
// it again to catch results that change between runs, then checks the small
// stored cases in data/. It ends with a one-line summary such as
// `3/7 tasks pass`.
//
// Options (besides doctest's own): --task=ID[,ID...]  --seed=N  --data-dir=DIR
//   --outcomes=FILE  write each task's outcome as JSON and leave the summary line to
//                    the caller (tools/test.py, which adds what the grader also checks)
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend_budget.h"
#include "case_runner.h"
#include "data_manifest.h"
#include "diagnose.h"
#include "watchdog.h"

namespace {

enum class Outcome { pass, fail, not_implemented, not_run, needs_gpu };

#ifdef CUDACPU_BACKEND
#include <cudacpu/extension.h>
constexpr bool kOnCpu = true;
#else
constexpr bool kOnCpu = false;
#endif

const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::pass: return "pass";
        case Outcome::fail: return "fail";
        case Outcome::not_implemented: return "not_implemented";
        case Outcome::not_run: return "not_run";
        case Outcome::needs_gpu: return "needs_gpu";
    }
    return "?";
}

struct Suite {
    std::set<std::string> selected;  // empty: every task
    std::uint64_t seed = 0;
    std::string data_dir = "../data";
    std::string outcomes_file;  // --outcomes: JSON for tools/test.py, which prints the summary
    std::vector<ManifestCase> stored;
    DeviceInfo device;
    std::unique_ptr<L2Flusher> flusher;
    std::vector<std::pair<std::string, Outcome>> outcomes;  // registry order
    std::string lost_context_in;  // the case whose fault left the GPU unusable
    std::unique_ptr<Watchdog> watchdog;
};

Suite suite;

// Failures shown per task (the rest are counted): each element type's first, and later
// ones only when they bring a hint not shown yet (a square shape tells a transposed
// result, another type another cause).
constexpr int kMaxReportedFailures = 4;
constexpr double kCaseTimeoutSeconds = 120;

std::string case_name(const Task& t, DType d, const Shape& s) {
    return t.id + " " + dtype_name(d) + " " + s.str();
}

std::string failure_text(const CaseResult& r, const Task& task) {
    std::string s = case_name(task, r.dtype, r.shape);
    if (r.source != "random") s += " (stored case " + r.source.substr(5) + ")";
    s += ": " + r.message;
    if (!r.hint.empty()) s += "\n  hint: " + r.hint;
    if (r.source == "random") s += "\n  (inputs from seed " + std::to_string(r.seed) + ")";
    return s;
}

enum class Next { go_on, next_type, stop_task };

// Runs one case; says whether the task's next case should run.
struct Reported {
    std::vector<std::string> build_errors;  // build errors already shown
    std::vector<std::string> hints;         // hints already shown
    int shown = 0, shown_this_type = 0;
};

Next run_one(const Task& task, DType d, const Shape& shape, const DataCase* data, int& failures, Reported& reported,
             std::vector<ShapeOutcome>& shapes, Outcome& outcome) {
    CaseOptions o;
    o.seed = suite.seed;
    o.check_runs = 2;  // a second verified run exposes results that change between runs
    suite.watchdog->arm(case_name(task, d, shape));
    const CaseResult r = run_case(task, d, shape, o, suite.device, nullptr, *suite.flusher, data);
    suite.watchdog->disarm();
    if (r.status == CaseStatus::not_implemented) {
        outcome = Outcome::not_implemented;
        return Next::stop_task;
    }
    if (r.status == CaseStatus::build_error && kOnCpu && r.message.find("needs a GPU") != std::string::npos) {
        // The CPU backend cannot run this file (inline PTX, cuBLAS, ...): not a mistake of the task.
        outcome = Outcome::needs_gpu;
        reported.build_errors.push_back(r.message);
        return Next::stop_task;
    }
    if (r.status == CaseStatus::build_error) {
        // Every case of this type would say the same: say it once (once for the task when
        // the whole file did not build), and go on with the task's other types.
        outcome = Outcome::fail;
        if (std::find(reported.build_errors.begin(), reported.build_errors.end(), r.message) ==
            reported.build_errors.end()) {
            reported.build_errors.push_back(r.message);
            FAIL_CHECK((task.id + " " + dtype_name(d) + ": " + r.message));
        }
        return Next::next_type;
    }
    // Which shapes passed and which came out wrong tells a tile width (tile_pattern_hint); a launch
    // the GPU refused or a crash says nothing about tiles.
    if (!data && (r.status == CaseStatus::ok || r.status == CaseStatus::wrong))
        shapes.push_back({shape, r.status == CaseStatus::ok});
    if (r.status == CaseStatus::ok) return Next::go_on;
    outcome = Outcome::fail;
    ++failures;
    const bool new_hint = !r.hint.empty() &&
                          std::find(reported.hints.begin(), reported.hints.end(), r.hint) == reported.hints.end();
    if (reported.shown < kMaxReportedFailures && (reported.shown_this_type == 0 || new_hint)) {
        FAIL_CHECK(failure_text(r, task));
        ++reported.shown;
        ++reported.shown_this_type;
        if (!r.hint.empty()) reported.hints.push_back(r.hint);
    }
    if (r.context_lost) {
        suite.lost_context_in = case_name(task, d, shape);
        return Next::stop_task;
    }
    return Next::go_on;
}

void check_task(const Task& task) {
    Outcome outcome = Outcome::pass;
    if (!suite.lost_context_in.empty()) {
        suite.outcomes.emplace_back(task.id, Outcome::not_run);
        return;
    }
    int failures = 0, cases = 0, gpu_only = 0;
    std::string gpu_only_shapes;
    Reported reported;
    Next next = Next::go_on;
    for (DType d : task.dtypes) {
        std::vector<ShapeOutcome> shapes;
        next = Next::go_on;
        reported.shown_this_type = 0;
        for (const Shape& s : task.shapes.test) {
            if (!runs_on_this_backend(s)) {
                ++gpu_only;
                if (d == task.dtypes.front()) gpu_only_shapes += (gpu_only_shapes.empty() ? "" : ", ") + s.str();
                continue;
            }
            if ((next = run_one(task, d, s, nullptr, failures, reported, shapes, outcome)) != Next::go_on) break;
            ++cases;
        }
        for (const ManifestCase& m : suite.stored) {
            if (next != Next::go_on || m.task != &task || m.dtype != d) continue;
            const DataCase data = load_data_case(suite.data_dir, m.dir, task, d, m.shape, m.seed);
            if ((next = run_one(task, d, m.shape, &data, failures, reported, shapes, outcome)) != Next::go_on) break;
            ++cases;
        }
        const std::string pattern = tile_pattern_hint(shapes);
        if (!pattern.empty()) FAIL_CHECK((task.id + " " + dtype_name(d) + ": " + pattern));
        if (next == Next::stop_task) break;
    }
    std::printf("%-13s ", task.id.c_str());
    switch (outcome) {
        case Outcome::pass:
            if (gpu_only > 0)
                std::printf("pass (%d cases; %d GPU only: %s)\n", cases, gpu_only, gpu_only_shapes.c_str());
            else
                std::printf("pass (%d cases)\n", cases);
            break;
        case Outcome::not_implemented: std::printf("not implemented yet\n"); break;
        case Outcome::needs_gpu: std::printf("%s\n", reported.build_errors.front().c_str()); break;
        default:
            if (cases == 0 && !reported.build_errors.empty())  // no case of any type ran
                std::printf("FAIL (%s)\n", reported.build_errors.front().c_str());
            else if (failures == 0)  // every case that ran passed; some type was not built
                std::printf("FAIL (%zu of its element types not built)\n", reported.build_errors.size());
            else
                std::printf("FAIL (%d of the cases failed%s%s)\n", failures,
                            failures > reported.shown ? ("; " + std::to_string(reported.shown) + " are shown").c_str()
                                                      : "",
                            reported.build_errors.empty() ? "" : "; some element types not built");
    }
    if (gpu_only > 0 && outcome != Outcome::pass && outcome != Outcome::needs_gpu)
        std::printf("%-13s (%d cases GPU only: %s)\n", "", gpu_only, gpu_only_shapes.c_str());
    std::fflush(stdout);
    suite.outcomes.emplace_back(task.id, outcome);
}

// Takes the suite's own options out of argv, leaving doctest's.
bool parse_suite_options(int& argc, char** argv) {
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* name) { return a.rfind(name, 0) == 0 ? a.substr(std::strlen(name)) : std::string(); };
        if (!value("--task=").empty()) {
            std::stringstream ss(value("--task="));
            for (std::string id; std::getline(ss, id, ',');) {
                if (!find_task(id)) {
                    std::fprintf(stderr, "unknown task '%s' (tasks: %s)\n", id.c_str(), task_ids_joined().c_str());
                    return false;
                }
                suite.selected.insert(id);
            }
        } else if (!value("--seed=").empty()) {
            suite.seed = std::stoull(value("--seed="));
        } else if (!value("--data-dir=").empty()) {
            suite.data_dir = value("--data-dir=");
        } else if (!value("--outcomes=").empty()) {
            suite.outcomes_file = value("--outcomes=");
        } else {
            argv[kept++] = argv[i];
        }
    }
    argc = kept;
    return true;
}

}  // namespace

TEST_CASE("every task passes on every type and test shape") {
    for (const Task& task : all_tasks())
        if (suite.selected.empty() || suite.selected.count(task.id)) SUBCASE(task.id.c_str()) { check_task(task); }
}

int main(int argc, char** argv) {
    if (!parse_suite_options(argc, argv)) return 2;
    std::string why;
    if (!cuda_device_available(&why)) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return 4;
    }
    try {
        suite.stored = read_manifest(suite.data_dir);
        suite.device = query_device();
        suite.flusher = std::make_unique<L2Flusher>();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 4;
    }
    if (suite.seed == 0) suite.seed = std::random_device{}() | 1;
#ifdef CUDACPU_BACKEND
    cudacpu_set_quiet(1);  // each report is in its case's message
    cudacpu_set_launch_timeout(kCaseTimeoutSeconds - 10);  // a stuck kernel is a case error naming its line
#endif
    std::printf("Testing on %s with inputs from seed %llu (repeat with: make test SEED=%llu)\n\n",
                suite.device.name.c_str(), static_cast<unsigned long long>(suite.seed),
                static_cast<unsigned long long>(suite.seed));
    suite.watchdog = std::make_unique<Watchdog>(kCaseTimeoutSeconds, 3, [](const std::string& label, double s) {
        std::printf("\n%s: no result after %.0f s, so the suite stops here. The kernel probably never finishes: "
                    "look for a loop that never ends, or a __syncthreads() that not every thread reaches.\n",
                    label.c_str(), s);
    });

    doctest::Context context;
    context.setOption("no-version", true);
    // doctest's own footer only when something failed: on untouched stubs it said "Status: SUCCESS!"
    // above the suite's "0/7 tasks pass" line. The suite's summary line below has the last word.
    context.setOption("minimal", true);
    context.applyCommandLine(argc, argv);
    const int doctest_status = context.run();
    if (context.shouldExit()) return doctest_status;

    if (!suite.outcomes_file.empty()) {
        nlohmann::json out = {{"seed", suite.seed}, {"device", suite.device.name}, {"tasks", nlohmann::json::array()}};
        for (const auto& [id, outcome] : suite.outcomes)
            out["tasks"].push_back({{"id", id}, {"outcome", outcome_name(outcome)}});
        out["backend"] = kOnCpu ? "cpu" : "gpu";
        out["lost_context_in"] = suite.lost_context_in;
        std::ofstream(suite.outcomes_file) << out.dump() << "\n";
        return doctest_status;
    }

    int passed = 0;
    std::string not_implemented, failed, not_run, needs_gpu;
    for (const auto& [id, outcome] : suite.outcomes) {
        // (id as an argument: C++17 lets no lambda capture a structured binding, and clang before 16 refuses it)
        auto add = [](std::string& list, const std::string& task) { list += (list.empty() ? "" : ", ") + task; };
        if (outcome == Outcome::pass) ++passed;
        else if (outcome == Outcome::not_implemented) add(not_implemented, id);
        else if (outcome == Outcome::fail) add(failed, id);
        else if (outcome == Outcome::needs_gpu) add(needs_gpu, id);
        else add(not_run, id);
    }
    std::printf("%d/%zu tasks pass", passed, suite.outcomes.size());
    if (!failed.empty()) std::printf("; failing: %s", failed.c_str());
    if (!not_implemented.empty()) std::printf("; not implemented yet: %s", not_implemented.c_str());
    if (!needs_gpu.empty()) std::printf("; needs a GPU (not run on the CPU): %s", needs_gpu.c_str());
    if (!not_run.empty())
        std::printf("; not run, because the crash in %s left the GPU unusable: %s", suite.lost_context_in.c_str(),
                    not_run.c_str());
    std::printf("\n");
    // On the CPU a file that needs a GPU was not run: not counted against the run (as tools/test.py does).
    const bool all_pass = passed + static_cast<int>(std::count(needs_gpu.begin(), needs_gpu.end(), ',') +
                                                    !needs_gpu.empty()) == static_cast<int>(suite.outcomes.size()) &&
                          !suite.outcomes.empty();
    return all_pass && doctest_status == 0 ? 0 : 1;
}
