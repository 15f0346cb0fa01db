// bench: throughput against size for the assignment's kernels, beside what the
// course compares them with. `make bench` runs it, then bench/plot_bench.py,
// which turns its bench.json into a table (bench.md) and plots (*.png).
//
// What it measures, each over a sweep of sizes (sweep.h):
//   * your kernels (for the solution's own bench, the solution's): every run's
//     output is checked, and each is timed by the harness's timing loop (L2
//     flushed before every sample, samples until the median is known within
//     1% or the time budget is spent);
//   * cuBLAS SGEMM in plain FP32 (pedantic math: no TF32) at every matmul size;
//   * the naive matmul with inverted indexing (solution/bench/naive_inverted.cu, in the solution's bench), next to
//     your coalesced one;
//   * a device-to-device copy moving as many bytes as each memory-bound task
//     (fill, add, transpose, dot) must: the ceiling those tasks are rated against;
//   * matmul on the CPU, three ways (cpu_gemm.h), on one core, until a run
//     would take longer than --cpu-seconds;
//   * host-device copies from pageable and from pinned memory (transfers.h).
// A size whose run is predicted to take longer than --max-run-ms is skipped,
// and its row says so: a slow kernel never makes the bench take minutes.
//
// Run it from starter/:
//   make bench                       everything, then the table and the plots
//   make bench TASK=matmul_naive     one task, with the baselines it is compared with
//   ./build/starter/bench --help     every option
// It writes results/bench/bench.json (its layout: bench_report.h).
//
// Exit status: 0 measured (a row says when a kernel is not implemented yet or
// wrong); 2 bad arguments; 3 a kernel crashed or hung (what was measured before
// is written); 4 cannot run (no CUDA device, output folder not writable).
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench_report.h"
#include "case_runner.h"
#include "cpu_bench.h"
#include "cuda_check.h"
#include "device_limits.h"
#include "gpu_baselines.h"
#include "sweep.h"
#include "transfers.h"
#include "watchdog.h"

namespace {

enum Exit { kOk = 0, kUsage = 2, kError = 3, kCannotRun = 4 };

struct Options {
    std::vector<std::string> tasks;
    std::string label = "student";
    std::string out = "results/bench";
    bool quick = false, no_cpu = false, no_transfers = false;
    double budget_seconds = 0.5;  // timing budget of one (implementation, size)
    double max_run_ms = 100;
    double cpu_seconds = 2;
    double case_timeout = 120;
    std::uint64_t seed = 1;
    int device = 0;
};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The element type a task is swept in: float32 where it has one (fill has only int32).
DType sweep_dtype(const Task& t) {
    for (DType d : t.dtypes)
        if (d == DType::f32) return d;
    return t.dtypes.front();
}

double run_work(const Task& t, const Shape& s, DType d) {
    return t.metric == Metric::gflops ? t.flops(s) : t.min_bytes(s, d);
}

BenchRow empty_row(const Task& t, const std::string& row_task, const std::string& impl, DType d, const Shape& s) {
    return {row_task, impl, dtype_name(d), s.str(), shape_size(s), {}, {}, metric_unit(t.metric), ""};
}

// What a reader of a timed row should know: a noisy median or a slowed clock.
std::string timing_note(const CaseResult& r, const DeviceInfo& device) {
    std::string note;
    const double ci = r.timing->stats.relative_ci();
    if (ci > 0.05) note = "noisy: median known within " + std::to_string(static_cast<int>(100 * ci + 0.5)) + "%";
    const int max_clock = max_sm_clock_mhz(device);
    if (r.sm_clock_mhz_after > 0 && max_clock > 0 && r.sm_clock_mhz_after < 0.9 * max_clock)
        note += (note.empty() ? "" : "; ") + std::string("SM clock ") + std::to_string(r.sm_clock_mhz_after) +
                " MHz after timing, below its maximum " + std::to_string(max_clock) + " MHz (" +
                r.clock_limit_reasons + ")";
    return note;
}

// Runs implementations of tasks over the sweep's sizes through the harness's
// case runner, which checks every run and times it.
class GpuSweep {
public:
    GpuSweep(BenchReport& report, const DeviceInfo& device, const DeviceLimits& limits, L2Flusher& flusher,
             const Options& o, std::FILE* human)
        : report_(report), device_(device), limits_(limits), flusher_(flusher), max_run_ms_(o.max_run_ms),
          watchdog_(o.case_timeout, kError, [this, human](const std::string& label, double seconds) {
              on_hang(label, seconds, human);
          }) {
        options_.seed = o.seed;
        options_.time = true;
        options_.timing.budget_seconds = o.budget_seconds;
    }

    void run(const Task& task, const std::string& row_task, const std::string& impl, DType d,
             const std::vector<Shape>& shapes) {
        std::optional<MeasuredRun> last;
        // Set once the implementation turns out missing, wrong or failing: the
        // larger sizes would only repeat that, slowly (make test says why).
        std::string stop_note;
        for (const Shape& s : shapes) {
            BenchRow row = empty_row(task, row_task, impl, d, s);
            const double work = run_work(task, s, d);
            if (!fault_.empty()) {
                row.note = "not run: the earlier fault in " + fault_ + " left the GPU unusable in this process";
            } else if (!stop_note.empty()) {
                row.note = stop_note;
            } else if (auto why = skip_reason(last, work, max_run_ms_, "--max-run-ms")) {
                row.note = *why;
            } else {
                current_ = row;
                watchdog_.arm(row_task + " " + impl + " " + row.shape);
                const CaseResult r = run_case(task, d, s, options_, device_, &limits_, flusher_);
                watchdog_.disarm();
                switch (r.status) {
                    case CaseStatus::ok:
                        if (!r.timing) break;
                        row.ms = r.timing->stats.median;
                        row.throughput = r.throughput;
                        row.note = timing_note(r, device_);
                        last = MeasuredRun{row.size, *row.ms, work};
                        break;
                    case CaseStatus::not_implemented: stop_note = row.note = "not implemented yet"; break;
                    case CaseStatus::build_error: stop_note = row.note = "not built: " + r.message; break;
                    case CaseStatus::wrong:
                        row.note = "wrong result, not timed: " + r.message;
                        stop_note = "not run: the result was wrong at " + row.shape + " (make test TASK=" +
                                    task.id + " shows why)";
                        break;
                    case CaseStatus::error:
                        row.note = "error: " + r.message;
                        stop_note = "not run after the error at " + row.shape;
                        ++errors_;
                        if (r.context_lost) fault_ = row_task + " (" + impl + ") at " + row.shape;
                        break;
                }
            }
            report_.add(row);
        }
    }

    // A device copy moving each shape's bytes, beside a memory-bound task.
    void copies(const Task& task, DType d, const std::vector<Shape>& shapes) {
        for (const Shape& s : shapes) {
            BenchRow row = empty_row(task, task.id, "copy", d, s);
            const CopyTiming c = time_device_copy(static_cast<std::size_t>(task.min_bytes(s, d)), options_.timing,
                                                  flusher_);
            row.ms = c.timing.stats.median;
            row.throughput = c.gbps();
            row.unit = metric_unit(Metric::gbps);
            report_.add(row);
        }
    }

    int errors() const { return errors_; }

private:
    void on_hang(const std::string& label, double seconds, std::FILE* human) {
        BenchRow row = current_;
        row.note = "error: no result after " + std::to_string(static_cast<int>(seconds)) +
                   " s; the kernel probably never finishes, so the bench stopped here";
        std::fprintf(human, "\n%s: no result after %.0f s; stopping.\n", label.c_str(), seconds);
        report_.add(row);
        try {
            report_.write();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "bench: %s\n", e.what());
        }
    }

    BenchReport& report_;
    const DeviceInfo& device_;
    const DeviceLimits& limits_;
    L2Flusher& flusher_;
    double max_run_ms_;
    CaseOptions options_;
    Watchdog watchdog_;
    BenchRow current_;   // the case the watchdog is waiting for
    std::string fault_;  // the case whose fault left the GPU unusable
    int errors_ = 0;
};

std::vector<const Task*> selected_tasks(const Options& o) {
    std::vector<const Task*> tasks;
    for (const std::string& id : o.tasks) {
        const Task* t = find_task(id);
        if (!t) throw UsageError("unknown task '" + id + "' (tasks: " + task_ids_joined() + ")");
        tasks.push_back(t);
    }
    if (tasks.empty())
        for (const Task& t : all_tasks()) tasks.push_back(&t);
    return tasks;
}

// Creates the output folder and proves a file can be written there, before the GPU is touched.
std::string prepare_output(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string probe = dir + "/.bench-write-test";
    if (ec || !std::ofstream(probe)) throw std::runtime_error("cannot write to the output folder " + dir);
    std::filesystem::remove(probe, ec);
    return dir + "/bench.json";
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"bench: throughput against size for the assignment's kernels, beside cuBLAS FP32, device copy, "
                 "the naive matmul with inverted indexing, CPU matmuls and host-device transfers.\n"
                 "Writes OUT/bench.json; bench/plot_bench.py makes its table and plots (make bench runs both).\n"
                 "Exit status: 0 measured, 2 bad arguments, 3 a kernel crashed or hung, 4 cannot run.",
                 "bench"};
    app.add_option("--task", o.tasks, "Only these tasks (repeat or comma-separate): " + task_ids_joined())
        ->delimiter(',');
    app.add_option("--label", o.label, "Whose kernels these are: student or solution")
        ->check(CLI::IsMember({"student", "solution"}));
    app.add_option("--out", o.out, "Folder for bench.json (created if missing)")->capture_default_str();
    app.add_flag("--quick", o.quick, "Small sizes and short budgets only: a smoke test of a few seconds");
    app.add_option("--budget", o.budget_seconds, "Timing budget in seconds for one implementation at one size")
        ->capture_default_str()
        ->check(CLI::Range(0.01, 600.0));
    app.add_option("--max-run-ms", o.max_run_ms,
                   "Skip a size whose one run is predicted to take longer than this (ms)")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 1e7));
    app.add_option("--cpu-seconds", o.cpu_seconds,
                   "Stop growing a CPU matmul once one run is predicted to take longer than this (s)")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 3600.0));
    app.add_flag("--no-cpu", o.no_cpu, "Do not time the CPU matmuls");
    app.add_flag("--no-transfers", o.no_transfers, "Do not time host-device transfers");
    app.add_option("--seed", o.seed, "Seed for the input generator")->capture_default_str();
    app.add_option("--case-timeout", o.case_timeout, "Seconds one kernel at one size may take before it is stopped")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 86400.0));
    app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);

    std::vector<const Task*> tasks;
    std::string json_path;
    try {
        app.parse(argc, argv);
        tasks = selected_tasks(o);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "bench: %s\n\n%s", e.what(), app.help().c_str());
        return kUsage;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "bench: %s\n\n%s", e.what(), app.help().c_str());
        return kUsage;
    }
    if (o.quick) {  // shorter budgets, unless given
        if (!app.count("--budget")) o.budget_seconds = 0.1;
        if (!app.count("--cpu-seconds")) o.cpu_seconds = 0.2;
    }
    try {
        json_path = prepare_output(o.out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench: %s\n", e.what());
        return kCannotRun;
    }

    DeviceInfo device;
    if (!open_device(o.device, "bench", &device)) return kCannotRun;

    std::FILE* human = stdout;
    BenchReport report(json_path, o.label, utc_now_iso(), human);
    std::fprintf(human, "bench of the %s's kernels on %s (sm_%d%d, %d SMs)%s\n", o.label.c_str(), device.name.c_str(),
                 device.cc_major, device.cc_minor, device.sm_count, o.quick ? ", quick" : "");
    int errors = 0;
    bool measured = false;  // the device's limits are in: a file worth writing
    try {
        // The device's ceilings first, then the baselines, then the kernels: a
        // kernel that crashes the GPU leaves everything else measured.
        const DeviceLimits limits = measure_limits(TimingOptions{});
        report.set_device({device.name, current_sm_clock_mhz(device), limits.copy_gbps, limits.sgemm_gflops});
        measured = true;
        std::fprintf(human, "device limits: copy %.0f GB/s, cuBLAS SGEMM FP32 %.0f GFLOP/s at %s\n", limits.copy_gbps,
                     limits.sgemm_gflops, limits.sgemm_shape.str().c_str());

        L2Flusher flusher;
        TimingOptions timing;
        timing.budget_seconds = o.budget_seconds;
        if (!o.no_transfers)
            for (const TransferRow& t : measure_transfers(transfer_sizes(o.quick), timing, flusher)) report.add(t);

        GpuSweep sweep(report, device, limits, flusher, o, human);
        bool any_matmul = false, naive = false;
        for (const Task* t : tasks) {
            if (t->shape_kind == ShapeKind::gemm) {
                any_matmul = true;
                naive |= t->id == "matmul_naive";
            } else {
                sweep.copies(*t, sweep_dtype(*t), sweep_shapes(t->shape_kind, o.quick));
            }
        }
        const std::vector<Shape> gemm_shapes = sweep_shapes(ShapeKind::gemm, o.quick);
        if (any_matmul) {
            const Task cublas = cublas_sgemm_task(pedantic_cublas());
            sweep.run(cublas, "matmul", "cublas", DType::f32, gemm_shapes);
        }
        // The inverted kernel ships with the solution's bench only (it is the naive
        // solution with two indices swapped); students see its recorded numbers.
        if (naive && naive_inverted_task)
            sweep.run(naive_inverted_task(), "matmul_naive", "naive-inverted", DType::f32, gemm_shapes);
        if (any_matmul && !o.no_cpu) {
            CpuBenchOptions cpu;
            cpu.max_run_seconds = o.cpu_seconds;
            cpu.seed = o.seed;
            cpu.tolerance = find_task("matmul_naive")->tolerance;
            bench_cpu_gemms(gemm_shapes, cpu, report);
        }
        for (const Task* t : tasks)
            sweep.run(*t, t->id, o.label, sweep_dtype(*t), sweep_shapes(t->shape_kind, o.quick));
        errors = sweep.errors();
        report.write();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench: %s\n", e.what());
        try {
            if (measured) report.write();  // what was measured before; an earlier file is kept otherwise
        } catch (const std::exception& w) {
            std::fprintf(stderr, "bench: %s\n", w.what());
        }
        return kError;
    }
    std::fprintf(human, "wrote %s\n", json_path.c_str());
    return errors ? kError : kOk;
}
