// harness: checks and times the assignment's kernels.
//
//   harness                              every task, its timed shapes, checked and timed
//   harness --task matmul_tiled --suite test   the student-suite shapes, checked only
//   harness --suite graded               the grader's correctness shapes (any set of the registry)
//   harness --suite data --data-dir ../data    the stored reference cases
//   harness --limits                     the device's copy bandwidth and cuBLAS FP32 rate
//   harness --list-tasks --json          the task registry, for the grader
//   harness --json results.jsonl         also write one JSON record per case
//   harness --serve                      answer JSON requests on stdin (the grader's paired timing)
//
// Exit status: 0 every case ok; 1 some case wrong or not implemented;
// 2 bad arguments; 3 some case ended in an error (a GPU fault, a timeout);
// 4 the harness could not run (no CUDA device, missing or corrupt data file).
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <streambuf>

#include "case_runner.h"
#include "data_manifest.h"
#include "record.h"
#include "serve.h"
#include "table.h"
#include "version.h"
#include "watchdog.h"

namespace {

// An input stream over a file descriptor, read as bytes arrive (a request is a line, never a full buffer):
// the portable stand-in for libstdc++'s __gnu_cxx::stdio_filebuf, which Apple's libc++ lacks.
class DescriptorBuffer : public std::streambuf {
public:
    explicit DescriptorBuffer(int fd) : fd_(fd) {}

protected:
    int_type underflow() override {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        ssize_t n;
        do n = ::read(fd_, buffer_, sizeof buffer_);
        while (n < 0 && errno == EINTR);
        if (n <= 0) return traits_type::eof();
        setg(buffer_, buffer_, buffer_ + n);
        return traits_type::to_int_type(*gptr());
    }

private:
    int fd_;
    char buffer_[4096];
};

enum Exit { kOk = 0, kFailed = 1, kUsage = 2, kError = 3, kCannotRun = 4 };

// A bad argument: the problem on one line and where the options are listed. The
// whole --help after it would push the one line that matters off the screen.
int usage_error(const std::string& problem) {
    std::fprintf(stderr, "harness: %s\nRun 'harness --help' for every option.\n", problem.c_str());
    return kUsage;
}

struct PlannedCase {
    const Task* task;
    DType dtype;
    Shape shape;
    std::shared_ptr<const DataCase> data;  // a stored case from data/, loaded while planning
};

struct Options {
    std::vector<std::string> tasks, dtypes, shapes;
    std::string suite = "timed";
    std::string data_dir;
    std::uint64_t seed = 0;
    bool seed_given = false;
    bool check_only = false, time = false, limits_only = false, no_limits = false, list_tasks = false;
    bool version = false, serve = false, fixed_placement = false;
    int check_runs = 1;
    std::string reference = "auto";
    int device = 0;
    double case_timeout = 300;
    std::string json_path;  // "-" for stdout
    bool json = false;
    TimingOptions timing;
};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Every argument and data file is checked here, before the GPU is touched.
std::vector<PlannedCase> plan(const Options& o, const std::vector<ManifestCase>& stored) {
    std::vector<const Task*> tasks;
    for (const std::string& id : o.tasks) {
        const Task* t = find_task(id);
        if (!t) throw UsageError("unknown task '" + id + "' (tasks: " + task_ids_joined() + ")");
        tasks.push_back(t);
    }
    if (tasks.empty())
        for (const Task& t : all_tasks()) tasks.push_back(&t);
    std::vector<DType> dtypes;
    for (const std::string& s : o.dtypes) {
        DType d;
        if (!parse_dtype(s, &d)) throw UsageError("unknown element type '" + s + "' (float32, float64, int32)");
        dtypes.push_back(d);
    }
    auto wanted = [&](const Task& t, DType d) {
        if (std::find(t.dtypes.begin(), t.dtypes.end(), d) == t.dtypes.end()) return false;
        return dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end();
    };

    std::vector<PlannedCase> cases;
    if (o.suite == "data") {
        for (const ManifestCase& m : stored)
            if (std::find(tasks.begin(), tasks.end(), m.task) != tasks.end() && wanted(*m.task, m.dtype))
                cases.push_back({m.task, m.dtype, m.shape,
                                 std::make_shared<const DataCase>(
                                     load_data_case(o.data_dir, m.dir, *m.task, m.dtype, m.shape, m.seed))});
        if (cases.empty()) throw UsageError("no stored case in " + o.data_dir + " matches the --task and --dtype given");
        return cases;
    }
    for (const Task* t : tasks) {
        std::vector<Shape> shapes = *find_shape_set(t->shapes, o.suite);
        if (!o.shapes.empty()) {
            shapes.clear();
            for (const std::string& text : o.shapes) {
                Shape s;
                std::string why;
                if (!parse_shape(text, t->shape_kind, &s, &why)) throw UsageError("--shape for task " + t->id + ": " + why);
                shapes.push_back(s);
            }
        }
        for (DType d : t->dtypes)
            if (wanted(*t, d))
                for (const Shape& s : shapes) cases.push_back({t, d, s, nullptr});
    }
    if (cases.empty()) throw UsageError("no case matches the --task, --dtype and --shape given");
    return cases;
}

void print_registry(std::FILE* out) {
    std::fprintf(out, "%-13s %-24s %-7s %s\n", "task", "types", "shapes", "what the student writes");
    for (const Task& t : all_tasks()) {
        std::string types;
        for (DType d : t.dtypes) types += (types.empty() ? "" : ",") + std::string(dtype_name(d));
        std::fprintf(out, "%-13s %-24s %-7s %s\n", t.id.c_str(), types.c_str(), shape_kind_name(t.shape_kind),
                     t.summary.c_str());
    }
}

// Moves a descriptor to a random high number, close-on-exec, and closes the
// original: --serve's channels to the grader are not where code under test
// would look for them (0 and 1), nor inherited by anything it runs.
int hide_descriptor(int fd) {
    rlimit files{};
    const int top = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                        ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 16))
                        : 1024;
    std::random_device rd;
    const int floor = std::min(64, top / 2);
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, floor + static_cast<int>(rd() % static_cast<unsigned>(top - floor)));
    const int placed = moved >= 0 ? moved : fcntl(fd, F_DUPFD_CLOEXEC, floor);  // the random slot was past the last free one
    if (placed >= 0) close(fd);
    return placed;
}

std::uint64_t random_seed() {
    std::random_device rd;
    // 53 bits, so the seed survives a round trip through any JSON reader.
    return ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & ((std::uint64_t(1) << 53) - 1);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"harness " HARNESS_VERSION ": checks and times the assignment's CUDA kernels.\n"
                 "Exit status: 0 all ok, 1 wrong or not implemented, 2 bad arguments, 3 a case ended in an error, "
                 "4 cannot run.",
                 "harness"};
    app.add_option("--task", o.tasks, "Run only these tasks (repeat or comma-separate): " + task_ids_joined())
        ->delimiter(',');
    app.add_option("--dtype", o.dtypes, "Run only these element types: float32, float64, int32")->delimiter(',');
    app.add_option("--shape", o.shapes, "Run these shapes instead of the suite's: 17x33 (matrix), 17x33x29 (MxNxK), 1000 (dot)")
        ->delimiter(',');
    app.add_option("--suite", o.suite,
                   "Which shape set of the registry: timed (the default; checked and timed), graded (the grader's "
                   "correctness cases), test (the student suite's), sanitize, sweep, data (the stored cases), or profile "
                   "(make profile's)")
        ->transform([](std::string s) { return s == "bench" ? std::string("timed") : s; })  // its name before 2.0
        ->check(CLI::IsMember({"timed", "graded", "test", "sanitize", "sweep", "data", "profile"}));
    app.add_option("--data-dir", o.data_dir, "Directory with manifest.json (default $HARNESS_DATA_DIR or ../data)");
    app.add_option("--seed", o.seed, "Seed for the input generator (default: a fresh random seed, printed)");
    app.add_option("--reference", o.reference, "Where to compute the float64 reference: auto (by size), cpu, gpu")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    app.add_flag("--check-only", o.check_only, "Check results but do not time them");
    app.add_flag("--time", o.time, "Also time the other suites than timed");
    app.add_option("--check-runs", o.check_runs, "Untimed, verified runs per case before timing")->check(CLI::Range(1, 100));
    app.add_option("--budget", o.timing.budget_seconds, "Timing budget per case in seconds")->check(CLI::Range(0.01, 600.0));
    app.add_option("--warmup", o.timing.warmup_runs, "Warm-up runs before timing")->check(CLI::Range(0, 100));
    app.add_option("--min-samples", o.timing.min_samples, "Fewest timed samples")->check(CLI::Range(1, 100000));
    app.add_option("--max-samples", o.timing.max_samples, "Most timed samples")->check(CLI::Range(1, 100000));
    app.add_option("--target-ci", o.timing.target_relative_ci,
                   "Stop sampling when the 95% CI half-width is within this fraction of the median")
        ->check(CLI::Range(0.0001, 1.0));
    app.add_flag("--limits", o.limits_only, "Measure and print the device limits, then exit");
    app.add_flag("--no-limits", o.no_limits, "Do not measure the device limits (no % of limit column)");
    app.add_flag("--fixed-placement", o.fixed_placement,
                 "Put every input and the output alone in an allocation of exactly its size, with nothing after it "
                 "(no guard region), every call, instead of at a fresh random offset (for compute-sanitizer: a read "
                 "or write one element past an array's end then leaves its allocation)");
    app.add_option("--case-timeout", o.case_timeout, "Seconds a case may take before it is stopped as hung")
        ->check(CLI::Range(1.0, 86400.0));
    app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);
    app.add_option("--json", o.json_path, "Write JSON Lines to FILE (stdout when FILE is - or omitted)")
        ->expected(0, 1)
        ->default_str("-");
    app.add_flag("--list-tasks", o.list_tasks, "Print the task registry (as JSON with --json) and exit");
    app.add_flag("--version", o.version, "Print the harness version and exit");
    app.add_flag("--serve", o.serve, "Answer JSON requests on stdin, one per line (for the grader; see RESULTS_SCHEMA.md)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return usage_error(e.what());
    }
    o.json = app.count("--json") > 0;
    if (o.json && o.json_path.empty()) o.json_path = "-";
    o.seed_given = app.count("--seed") > 0;
    if (o.timing.max_samples < o.timing.min_samples) {
        return usage_error("--max-samples must be at least --min-samples");
    }
    if (o.version) {
        std::printf("harness %s (JSON schema %d)\n", HARNESS_VERSION, HARNESS_SCHEMA_VERSION);
        return kOk;
    }
    if (o.list_tasks) {
        if (o.json) std::cout << registry_json().dump(2) << "\n";
        else print_registry(stdout);
        return kOk;
    }

    if (o.serve) {
        std::string why;
        if (!cuda_device_available(&why)) {
            std::fprintf(stderr, "%s\n", why.c_str());
            return kCannotRun;
        }
        // Requests and replies move to hidden descriptors; stdin then reads
        // /dev/null and stdout points at stderr, so the code under test can
        // neither read the grader's next request nor print into the replies.
        const int request_fd = hide_descriptor(STDIN_FILENO);
        const int reply_fd = hide_descriptor(STDOUT_FILENO);
        const int null_fd = open("/dev/null", O_RDONLY);  // the lowest free descriptor: 0, now stdin's was moved
        std::FILE* replies = reply_fd >= 0 ? fdopen(reply_fd, "w") : nullptr;
        if (request_fd < 0 || !replies || null_fd < 0 || (null_fd != STDIN_FILENO && dup2(null_fd, STDIN_FILENO) < 0) ||
            dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            std::perror("harness: cannot set up --serve's channels");
            return kCannotRun;
        }
        if (null_fd != STDIN_FILENO) close(null_fd);
        DescriptorBuffer request_buffer(request_fd);
        std::istream request_stream(&request_buffer);
        try {
            CUDA_CHECK(cudaSetDevice(o.device));
            return serve(request_stream, replies, query_device());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "harness: %s\n", e.what());
            return kCannotRun;
        }
    }

    if (o.data_dir.empty()) o.data_dir = std::getenv("HARNESS_DATA_DIR") ? std::getenv("HARNESS_DATA_DIR") : "../data";
    std::vector<ManifestCase> stored;
    std::vector<PlannedCase> cases;
    try {
        if (o.suite == "data") stored = read_manifest(o.data_dir);
        if (!o.limits_only) cases = plan(o, stored);
    } catch (const UsageError& e) {
        return usage_error(e.what());
    } catch (const DataFileError& e) {
        std::fprintf(stderr, "harness: %s\n", e.what());
        return kCannotRun;
    }

    // Human output goes to stderr when the JSON goes to stdout.
    std::unique_ptr<std::ofstream> json_file;
    std::ostream* json_out = nullptr;
    if (o.json) {
        if (o.json_path == "-") {
            json_out = &std::cout;
        } else {
            json_file = std::make_unique<std::ofstream>(o.json_path);
            if (!*json_file) {
                std::fprintf(stderr, "harness: cannot write --json file %s\n", o.json_path.c_str());
                return kCannotRun;
            }
            json_out = json_file.get();
        }
    }
    std::FILE* human = json_out == &std::cout ? stderr : stdout;
    auto emit = [&](const nlohmann::json& j) {
        if (json_out) *json_out << j.dump() << "\n" << std::flush;
    };

    DeviceInfo device;
    if (!open_device(o.device, "harness", &device)) return kCannotRun;
    if (!o.seed_given) o.seed = random_seed();
    print_device_header(human, device, o.seed);

    const bool timing = o.suite == "timed" ? !o.check_only : o.time && !o.check_only;
    std::unique_ptr<DeviceLimits> limits;
    if (o.limits_only || (timing && !o.no_limits)) {
        try {
            limits = std::make_unique<DeviceLimits>(measure_limits(TimingOptions{}));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "harness: measuring the device limits failed: %s\n", e.what());
            return kError;
        }
        print_limits(human, *limits);
        emit(limits_record(*limits, device));
        if (o.limits_only) return kOk;
    }

    // A case that hangs is reported, recorded, and ends the process.
    const PlannedCase* current = nullptr;
    Watchdog watchdog(o.case_timeout, kError, [&](const std::string& label, double seconds) {
        std::fprintf(human, "\n%s: no result after %.0f s; stopping. The kernel probably never finishes.\n",
                     label.c_str(), seconds);
        if (current) emit(case_record(timeout_result(*current->task, current->dtype, current->shape, o.seed, seconds),
                                      *current->task, device));
    });

    L2Flusher flusher;
    print_table_header(human);
    int ok = 0, wrong = 0, not_implemented = 0, errors = 0;
    std::string fault;  // the case whose fault left the GPU unusable
    for (const PlannedCase& pc : cases) {
        CaseResult r;
        if (!fault.empty()) {
            r.task = pc.task->id;
            r.dtype = pc.dtype;
            r.shape = pc.shape;
            r.seed = o.seed;
            r.status = CaseStatus::error;
            r.message = "not run: the earlier fault in " + fault + " left the GPU unusable in this process";
        } else {
            CaseOptions co;
            co.seed = o.seed;
            co.check_runs = o.check_runs;
            co.reference = o.reference == "cpu"   ? ReferencePlace::cpu
                           : o.reference == "gpu" ? ReferencePlace::gpu
                                                  : ReferencePlace::automatic;
            co.time = timing;
            co.timing = o.timing;
            co.fixed_placement = o.fixed_placement;
            current = &pc;
            watchdog.arm(pc.task->id + " " + dtype_name(pc.dtype) + " " + pc.shape.str());
            r = run_case(*pc.task, pc.dtype, pc.shape, co, device, limits.get(), flusher, pc.data.get());
            watchdog.disarm();
        }
        print_case_row(human, r);
        emit(case_record(r, *pc.task, device));
        switch (r.status) {
            case CaseStatus::ok: ++ok; break;
            case CaseStatus::wrong:
            case CaseStatus::build_error: ++wrong; break;
            case CaseStatus::not_implemented: ++not_implemented; break;
            case CaseStatus::error: ++errors; break;
        }
        if (r.context_lost && fault.empty()) fault = r.task + " " + dtype_name(r.dtype) + " " + r.shape.str();
    }
    std::fprintf(human, "%zu cases: %s\n", cases.size(), status_counts(ok, wrong, not_implemented, errors).c_str());
    if (errors) return kError;
    if (wrong || not_implemented) return kFailed;
    return kOk;
}
