// The lab's sweep: candidates for one task (candidates.h), timed side by side
// beside the task's baseline, shape by shape, every output checked by the
// harness's case runner.
//
// For each shape, every candidate and the baseline (cuBLAS SGEMM in plain FP32,
// pedantic math, for matmul_fast; a device copy of the bytes the task must move
// for transpose) is first checked: two verified runs, whose outputs must also be
// the same bit for bit. Then they are timed in --rounds rounds, going round all
// of them each time, --samples / --rounds samples a round (the L2 flushed before
// every sample, every output verified), so that a drift of the clock reaches
// them all alike. Each is reported by the median of all its samples, and as a
// percentage of the baseline's median at the same shape.
//
//   sweep --task matmul_fast --candidates auto,large/1,large/4 --shape 1024x1024x1024,2048x2048x2048
//   sweep --list                       every candidate linked in
// Run it from starter/ (solution/lab/sweep.sh builds it and runs it there).
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "candidates.h"
#include "case_runner.h"
#include "cuda_check.h"
#include "device_info.h"
#include "gpu_baselines.h"

namespace {

struct Options {
    std::string task = "matmul_fast";
    std::vector<std::string> candidates, shapes;
    int samples = 15, rounds = 3;
    std::uint64_t seed = 1;
    std::string csv;
    bool list = false;
};

struct Row {
    std::string shape, name, plan, status = "ok";
    double ms = 0, ci = 0, throughput = 0, percent = 0;
    int samples = 0, mhz_low = -1, mhz_high = -1;
    bool differ = false;
};

const lab::Candidate* find_candidate(const std::string& task, const std::string& name) {
    for (const lab::Candidate& c : lab::candidates())
        if (c.task == task && c.name == name) return &c;
    return nullptr;
}

void clocks(const TimingResult& t, Row& row) {
    for (int mhz : t.sm_mhz) {
        if (mhz < 0) continue;
        row.mhz_low = row.mhz_low < 0 ? mhz : std::min(row.mhz_low, mhz);
        row.mhz_high = std::max(row.mhz_high, mhz);
    }
}

// One shape: checks every candidate, then times them round by round beside the baseline.
std::vector<Row> sweep_shape(const Task& task, const Shape& shape, const std::vector<const lab::Candidate*>& picked,
                             const Options& o, const DeviceInfo& device, L2Flusher& flusher) {
    CaseOptions co;
    co.seed = o.seed;
    co.check_runs = 2;
    co.time = true;
    std::vector<Task> tasks;  // the baseline (matmul_fast: cuBLAS) first, then the candidates
    std::vector<std::string> names, plans;
    const bool gemm = task.shape_kind == ShapeKind::gemm;
    if (gemm) {
        tasks.push_back(cublas_sgemm_task(pedantic_cublas()));
        names.push_back("cublas");
        plans.push_back("");
    }
    for (const lab::Candidate* c : picked) {
        Task t = task;
        t.launch = c->launch;
        tasks.push_back(std::move(t));
        names.push_back(c->name);
        plans.push_back(c->plan ? c->plan(shape) : "");
    }
    std::vector<std::unique_ptr<CaseRun>> runs;
    for (const Task& t : tasks) {
        runs.push_back(std::make_unique<CaseRun>(t, DType::f32, shape, co, device));
        runs.back()->check();
    }
    TimingOptions round;
    round.budget_seconds = 600;
    round.target_relative_ci = 0;  // exactly `per_round` samples
    round.min_samples = round.max_samples = std::max(1, o.samples / o.rounds);
    std::optional<TimingResult> copy;  // the memory tasks' baseline
    const std::size_t copy_bytes = static_cast<std::size_t>(task.min_bytes(shape, DType::f32));
    for (int r = 0; r < o.rounds; ++r) {
        if (!gemm) {
            const CopyTiming t = time_device_copy(copy_bytes, round, flusher);
            if (copy) copy->append(t.timing);
            else copy = t.timing;
        }
        for (auto& run : runs)
            if (run->ready_to_time()) run->time(round, flusher, nullptr);
    }
    std::vector<Row> rows;
    if (copy) {
        Row row{shape.str(), "copy", "device-to-device copy of the same bytes"};
        row.ms = copy->stats.median;
        row.ci = copy->stats.relative_ci();
        row.samples = copy->stats.samples;
        row.throughput = copy_bytes / (row.ms * 1e-3) / 1e9;
        clocks(*copy, row);
        rows.push_back(row);
    }
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const CaseResult& r = runs[i]->result();
        Row row{shape.str(), names[i], plans[i]};
        row.differ = r.check.runs_differ;
        if (r.status != CaseStatus::ok) row.status = std::string(status_name(r.status)) + ": " + r.message;
        else if (row.differ) row.status = "ok, but two runs differ bitwise";
        if (r.timing) {
            row.ms = r.timing->stats.median;
            row.ci = r.timing->stats.relative_ci();
            row.samples = r.timing->stats.samples;
            row.throughput = r.throughput;
            clocks(*r.timing, row);
        }
        rows.push_back(row);
    }
    const double base = rows.empty() ? 0 : rows.front().ms;
    for (Row& row : rows) row.percent = row.ms > 0 && base > 0 ? 100.0 * base / row.ms : 0;
    return rows;
}

void print(std::FILE* out, const Row& r, const char* unit) {
    std::fprintf(out, "%-16s %-12s %-34s %9.4f %5.1f%% %9.0f %s %6.1f%%  %4d-%4d MHz  %s\n", r.shape.c_str(),
                 r.name.c_str(), r.plan.c_str(), r.ms, 100 * r.ci, r.throughput, unit, r.percent, r.mhz_low,
                 r.mhz_high, r.status.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"The lab's sweep: candidates timed beside cuBLAS (matmul_fast) or a copy (transpose)"};
    app.add_option("--task", o.task, "matmul_fast or transpose")->capture_default_str();
    app.add_option("--candidates", o.candidates, "Candidates to time (default: all of the task's)")->delimiter(',');
    app.add_option("--shape", o.shapes, "Shapes, e.g. 1024x1024x1024 (default: the task's bench shapes)")
        ->delimiter(',');
    app.add_option("--samples", o.samples, "Timed samples per candidate and shape")->capture_default_str();
    app.add_option("--rounds", o.rounds, "Rounds the samples are taken in, going round the candidates")
        ->capture_default_str();
    app.add_option("--seed", o.seed, "Seed for the inputs")->capture_default_str();
    app.add_option("--csv", o.csv, "Also add the table's rows to the CSV file FILE (its header first, when new)");
    app.add_flag("--list", o.list, "List the candidates linked in, and exit");
    CLI11_PARSE(app, argc, argv);

    if (o.list) {
        for (const lab::Candidate& c : lab::candidates())
            std::printf("%-12s %-14s %s\n", c.task.c_str(), c.name.c_str(), c.what.c_str());
        return 0;
    }
    const Task* task = find_task(o.task);
    if (!task || (o.task != "matmul_fast" && o.task != "transpose")) {
        std::fprintf(stderr, "sweep: --task must be matmul_fast or transpose\n");
        return 2;
    }
    std::vector<const lab::Candidate*> picked;
    if (o.candidates.empty())
        for (const lab::Candidate& c : lab::candidates())
            if (c.task == o.task) picked.push_back(&c);
    for (const std::string& name : o.candidates) {
        const lab::Candidate* c = find_candidate(o.task, name);
        if (!c) {
            std::fprintf(stderr, "sweep: no %s candidate %s is linked in (sweep --list)\n", o.task.c_str(),
                         name.c_str());
            return 2;
        }
        picked.push_back(c);
    }
    std::vector<Shape> shapes;
    for (const std::string& text : o.shapes) {
        Shape s;
        std::string why;
        if (!parse_shape(text, task->shape_kind, &s, &why)) {
            std::fprintf(stderr, "sweep: --shape %s: %s\n", text.c_str(), why.c_str());
            return 2;
        }
        shapes.push_back(s);
    }
    if (shapes.empty()) shapes = task->shapes.sweep;

    DeviceInfo device;
    if (!open_device(0, "sweep", &device)) return 4;
    std::printf("device: %s, %d SMs, SM clock %d MHz now (max %d), CUDA runtime %s, driver %s\n", device.name.c_str(),
                device.sm_count, current_sm_clock_mhz(device), max_sm_clock_mhz(device),
                cuda_version_string(device.runtime_version).c_str(), cuda_version_string(device.driver_version).c_str());
    std::printf("each: median of %d samples taken in %d interleaved rounds, L2 flushed, every output checked\n",
                o.samples / o.rounds * o.rounds, o.rounds);
    const char* unit = task->metric == Metric::gflops ? "GFLOP/s" : "GB/s   ";
    std::printf("%-16s %-12s %-34s %9s %6s %9s %s %7s  %-13s %s\n", "shape", "candidate", "plan", "ms", "±95%",
                "rate", unit, task->metric == Metric::gflops ? "cuBLAS" : "copy", "SM clock", "check");
    std::ofstream csv;
    if (!o.csv.empty()) {
        const bool fresh = !std::ifstream(o.csv).good();
        csv.open(o.csv, std::ios::app);
        if (fresh)
            csv << "task,shape,candidate,plan,median_ms,ci95_relative,rate,percent_of_baseline,samples,sm_mhz_low,sm_mhz_high,"
               "runs_differ,status\n";
    }
    L2Flusher flusher;
    int bad = 0;
    try {
        for (const Shape& s : shapes) {
            for (const Row& r : sweep_shape(*task, s, picked, o, device, flusher)) {
                print(stdout, r, unit);
                bad += r.status != "ok";
                if (csv.is_open())
                    csv << o.task << "," << r.shape << "," << r.name << ",\"" << r.plan << "\"," << r.ms << "," << r.ci << ","
                        << r.throughput << "," << r.percent << "," << r.samples << "," << r.mhz_low << ","
                        << r.mhz_high << "," << r.differ << ",\"" << r.status << "\"\n";
            }
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sweep: %s\n", e.what());
        return 3;
    }
    if (bad) std::printf("%d of the rows above are not ok\n", bad);
    return bad ? 1 : 0;
}
