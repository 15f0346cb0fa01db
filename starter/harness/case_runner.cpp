#include "case_runner.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "cuda_check.h"
#include "device_buffer.h"
#include "device_ops.h"
#include "diagnose.h"
#include "placement.h"
#include "task_unavailable.h"
#include "tasks.h"

#ifdef CUDACPU_BACKEND
#include <string>

#include <cudacpu/extension.h>
#endif

const char* status_name(CaseStatus s) {
    switch (s) {
        case CaseStatus::ok: return "ok";
        case CaseStatus::wrong: return "wrong";
        case CaseStatus::not_implemented: return "not_implemented";
        case CaseStatus::build_error: return "build_error";
        case CaseStatus::error: return "error";
    }
    return "?";
}

namespace {

// Work (output elements times terms summed) up to which the float64
// reference is computed on the CPU; above it, on the GPU.
constexpr double kHostReferenceLimit = 1 << 22;

// Thrown out of the timing loop when a timed or warm-up run is wrong.
struct TimedRunWrong {
    std::string which;  // "timed run 7", "warm-up run 1"
    CheckResult check;
};

// A fault in the student's kernel surfaced after the launcher returned.
struct KernelFault : CudaError {
    using CudaError::CudaError;
};

void wait_for_kernels(const char* when) {
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
        throw KernelFault(err, std::string("your kernel failed ") + when + ": " + cudaGetErrorString(err) + " (" +
                                   cudaGetErrorName(err) + ")");
}

std::vector<double> download_as_doubles(DType t, const void* device, std::size_t n) {
    return dispatch_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> host(n);
        if (n) CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
        return std::vector<double>(host.begin(), host.end());
    });
}

bool element_is_poison(DType t, const void* device, std::size_t index) {
    unsigned char bytes[8] = {};
    const std::size_t size = dtype_size(t);
    CUDA_CHECK(cudaMemcpy(bytes, static_cast<const unsigned char*>(device) + index * size, size,
                          cudaMemcpyDeviceToHost));
    switch (t) {
        case DType::f32: { std::uint32_t v; std::memcpy(&v, bytes, 4); return v == kPoisonF32; }
        case DType::f64: { std::uint64_t v; std::memcpy(&v, bytes, 8); return v == kPoisonF64; }
        case DType::i32: { std::int32_t v; std::memcpy(&v, bytes, 4); return v == kPoisonI32; }
    }
    return false;
}

// Device memory for one case. The kernel sees `args`: its inputs and output
// at this call's offsets inside `inputs` and `output` (placement.h); the
// reference is made from `input_copies`, which nothing else touches.
struct Workspace {
    OutputLayout layout;
    DType t = DType::f32;
    Placement placement = Placement::fresh;
    std::size_t guard = 0;  // elements of poisoned guard region after the output
    std::vector<DeviceBuffer> inputs, input_copies;
    DeviceBuffer output, reference, bound;
    DeviceArgs args, pristine;
    std::vector<std::string> input_names;  // for the CPU backend's reports: "a[1024]"

    std::size_t output_bytes() const { return layout.elements() * dtype_size(t); }
    void* placed_output() const { return args.output; }
};

Workspace allocate(const Task& task, DType t, const Shape& shape, Placement placement) {
    Workspace w;
    w.t = t;
    w.layout = task.output_layout(shape);
    w.placement = placement;
    w.input_names = task.input_names;
    const std::vector<std::size_t> elements = task.input_elements(shape);
    const CaseAllocations sizes = case_allocations(placement, elements, w.layout.elements(), dtype_size(t));
    for (std::size_t i = 0; i < elements.size(); ++i) {
        w.inputs.emplace_back(sizes.inputs[i]);
        w.input_copies.emplace_back(elements[i] * dtype_size(t));
        w.args.inputs.push_back(w.inputs.back().get());
        w.pristine.inputs.push_back(w.input_copies.back().get());
    }
    w.guard = sizes.guard;
    w.output = DeviceBuffer(sizes.output);
    w.reference = DeviceBuffer(w.layout.elements() * sizeof(double));
    w.bound = DeviceBuffer(w.layout.elements() * sizeof(double));
    w.args.output = w.output.get();
    return w;
}

// Places the arrays for call `call`: each input copied from its pristine copy
// to its offset, the output and its guard region poisoned at theirs. In fresh
// placement the rest of each input's allocation is poisoned first: a kernel
// that reads past an input's end must find poison there (not zeros, nor an
// earlier call's copy), or an off-by-one in a bounds check would pass.
void place(Workspace& w, std::uint64_t seed, std::uint64_t call) {
    const std::size_t n_inputs = w.inputs.size();
    for (std::size_t i = 0; i < n_inputs; ++i) {
        const std::size_t offset = array_offset(w.placement, seed, i, call);
        if (w.placement == Placement::fresh)
            poison_on_device(w.t, w.inputs[i].get(), w.inputs[i].bytes() / dtype_size(w.t));
        void* at = static_cast<unsigned char*>(w.inputs[i].get()) + offset;
        CUDA_CHECK(cudaMemcpyAsync(at, w.input_copies[i].get(), w.input_copies[i].bytes(), cudaMemcpyDeviceToDevice,
                                   0));
        w.args.inputs[i] = at;
#ifdef CUDACPU_BACKEND
        // On the CPU everything after an input's end is out of bounds (AddressSanitizer), in every
        // placement: a read there is reported with the array's name and index. (On a GPU memcheck sees
        // it in exact placement only; in exact placement the range is the whole allocation.)
        const std::size_t elements = w.input_copies[i].bytes() / dtype_size(w.t);
        cudacpu_set_valid_range(at, w.input_copies[i].bytes());
        cudacpu_name_allocation(at, i < w.input_names.size() ? w.input_names[i].c_str() : "input", elements,
                                dtype_size(w.t));
#endif
    }
    const std::size_t offset = array_offset(w.placement, seed, n_inputs, call);
    w.args.output = static_cast<unsigned char*>(w.output.get()) + offset;
    poison_on_device(w.t, w.args.output, w.layout.elements() + w.guard);
#ifdef CUDACPU_BACKEND
    // The guard region stays writable: a write there is the harness's to report, as on a GPU. In
    // exact placement there is none, and a write past the output's end is AddressSanitizer's.
    cudacpu_set_valid_range(w.args.output, (w.layout.elements() + w.guard) * dtype_size(w.t));
    cudacpu_name_allocation(w.args.output, "output", w.layout.elements() + w.guard, dtype_size(w.t));
#endif
}

void upload(const std::vector<double>& host, double* device) {
    CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice));
}

// Fills the reference and bound arrays; returns where they were computed.
std::string prepare_reference(const Task& task, DType t, const Shape& shape, Workspace& w, const DataCase* data,
                              ReferencePlace place) {
    const double k = task.terms_summed(shape), u = unit_roundoff(t), tiny = smallest_normal(t);
    const double work = static_cast<double>(w.layout.elements()) * k;
    const bool on_cpu = place == ReferencePlace::automatic ? work <= kHostReferenceLimit : place == ReferencePlace::cpu;
    if (data || on_cpu) {
        std::vector<std::vector<double>> in;
        for (const DeviceBuffer& copy : w.input_copies)
            in.push_back(download_as_doubles(t, copy.get(), copy.bytes() / dtype_size(t)));
        HostReference ref = task.reference_host(shape, in);
        std::vector<double> bound(ref.value.size());
        if (data) ref.value = data->expected.to_doubles();
        for (std::size_t i = 0; i < bound.size(); ++i) {
            bound[i] = tolerance_bound(task.tolerance, k, u, ref.magnitude[i], tiny);
            // A stored expected value was rounded to the element type once more.
            if (data && task.tolerance.model != ToleranceModel::exact) bound[i] += u * std::fabs(ref.value[i]);
        }
        upload(ref.value, w.reference.as<double>());
        upload(bound, w.bound.as<double>());
        return "cpu";
    }
    task.reference_device(t, shape, w.pristine, w.reference.as<double>(), w.bound.as<double>());
    bounds_on_device(w.bound.as<double>(), w.layout.elements(), task.tolerance, k, u, tiny);
    CUDA_CHECK(cudaDeviceSynchronize());
    return "gpu";
}

// What a call may have broken besides its output: the inputs it was given, and the guard after the output.
void check_inputs_and_guard(const Task& task, DType t, const Workspace& w, CheckResult& c) {
    c.modified_inputs.clear();
    for (std::size_t i = 0; i < w.inputs.size(); ++i)
        if (!equal_on_device(w.args.inputs[i], w.input_copies[i].get(), w.input_copies[i].bytes()))
            c.modified_inputs.push_back(task.input_names[i]);
    c.written_past_end = count_not_poison(t, w.placed_output(), c.elements, c.elements + w.guard);
}

CheckResult check_output(const Task& task, DType t, const Shape& shape, const Workspace& w, bool analyze) {
    void* out = w.placed_output();
    const CompareSummary s =
        compare_on_device(t, out, w.reference.as<double>(), w.bound.as<double>(), w.layout, analyze);
    CheckResult c;
    c.elements = w.layout.elements();
    const double k = task.terms_summed(shape), n = static_cast<double>(c.elements);
    c.type = dtype_name(t);
    c.mean_error_limit = mean_error_limit(task.tolerance, k, n, unit_roundoff(t));
    if (c.mean_error_limit > 0) {
        c.mean_error = mean_error_from_ratio(task.tolerance, k, s.ratio_sum / n);
        c.coarse_limit = coarse_relative_limit(k);
    }
    c.worst_relative = s.worst_ratio * tolerance_growth(task.tolerance, k) * unit_roundoff(t);
    c.wrong = s.wrong;
    c.unwritten = s.unwritten;
    c.nonfinite = s.nonfinite;
    c.matches_transposed = s.matches_transposed;
    for (int i = 0; i < kEdgeTileCount; ++i) c.wrong_in_edge[i] = s.wrong_in_edge[i];
    c.worst_ratio = s.worst_ratio;
    if (s.wrong > 0) {
        const std::size_t i = s.first_wrong;
        c.has_first_wrong = true;
        c.first_index = static_cast<std::int64_t>(i);
        c.first_row = static_cast<std::int64_t>(i) / w.layout.cols;
        c.first_col = static_cast<std::int64_t>(i) % w.layout.cols;
        c.expected = read_element_as_double(DType::f64, w.reference.get(), i);
        c.bound = read_element_as_double(DType::f64, w.bound.get(), i);
        c.got = read_element_as_double(t, out, i);
        c.first_unwritten = element_is_poison(t, out, i);
    }
    check_inputs_and_guard(task, t, w, c);
    return c;
}


// Makes the pristine inputs from `seed`; place() copies them where the kernel reads them.
void fill_inputs(const Task& task, DType t, const Shape& shape, Workspace& w, std::uint64_t seed,
                 const DataCase* data) {
    for (std::size_t i = 0; i < w.input_copies.size(); ++i) {
        DeviceBuffer& copy = w.input_copies[i];
        if (data) {
            CUDA_CHECK(cudaMemcpy(copy.get(), data->inputs[i].bytes.data(), copy.bytes(), cudaMemcpyHostToDevice));
        } else {
            generate_on_device(t, copy.get(), copy.bytes() / dtype_size(t), rng_key(seed, i), task.distribution,
                               int_bound(task, shape));
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
}

// The generator's stream for the seeds of timed and warm-up runs' inputs: above
// every input's stream and the placements'.
constexpr std::uint64_t kFreshInputStream = (std::uint64_t(1) << 32) + (std::uint64_t(1) << 31);

// The seed of call `call`'s inputs when every timed run gets inputs of its own: a pure
// function of (seed, call), so the student's and the solution's processes, which make
// the same calls, time each pair on the same data.
std::uint64_t fresh_input_seed(std::uint64_t seed, std::uint64_t call) {
    return rng_bits(rng_key(seed, kFreshInputStream), call);
}

// The reference and the bounds exist only between the end of a call and its check:
// while the student's code runs there is none in this process to copy.
void forget_reference(Workspace& w) {
    CUDA_CHECK(cudaMemset(w.reference.get(), 0, w.reference.bytes()));
    CUDA_CHECK(cudaMemset(w.bound.get(), 0, w.bound.bytes()));
}

// A run after a right first one went wrong: which, and what it got wrong.
std::string later_run_message(const CheckResult& later, const CheckResult& all, const Shape& shape) {
    const std::string which = "run " + std::to_string(all.first_bad_run + 1) + " of " + std::to_string(all.runs_checked);
    if (later.wrong == 0 && !later.too_inaccurate()) return which + ": " + describe_failure(later, shape);
    return "the output of " + which + " was wrong although run 1 was right: results must be computed on every "
           "call; " + describe_failure(later, shape);
}

void fail_with(CaseResult& r, CheckResult c, const OutputLayout& layout) {
    r.status = CaseStatus::wrong;
    r.check = std::move(c);
    r.message = describe_failure(r.check, r.shape);
    r.hint = case_hint(r.check, layout, r.shape);
}

}  // namespace

struct CaseRun::State {
    const Task& task;
    DType t;
    Shape shape;
    CaseOptions o;
    const DeviceInfo& device;
    const DataCase* data;
    Workspace w;
    CaseResult r;
    bool prepared = false;
    int warmups_done = 0;
    int samples_done = 0;     // timed runs so far, over every time() call
    std::uint64_t calls = 0;  // calls of the launcher so far: each gets its own placement

    void launch() { task.launch(t, shape, w.args); }
    void prepare_call() { place(w, o.seed, calls++); }
    // Timed and warm-up runs: inputs the kernel has not seen (stored cases keep theirs), so no
    // result kept from an earlier call, whatever its key, is this call's answer.
    void prepare_fresh_call() {
        if (!data) fill_inputs(task, t, shape, w, fresh_input_seed(o.seed, calls), nullptr);
        prepare_call();
    }
    // After the student's code returned: the float64 reference of this call's inputs, the check, and
    // the reference forgotten again.
    CheckResult check_call(bool analyze) {
        r.reference = prepare_reference(task, t, shape, w, data, o.reference);
        CheckResult c = check_output(task, t, shape, w, analyze);
        forget_reference(w);
        return c;
    }

    // Runs a step; whatever the student's code throws or breaks ends the case
    // with a status, never an exception.
    template <typename Step>
    void guarded(Step step) {
        try {
            step();
        } catch (const TaskNotImplemented&) {
            r.status = CaseStatus::not_implemented;
            r.message = "not implemented yet";
        } catch (const TaskUnavailable& e) {
            r.status = CaseStatus::build_error;
            r.message = e.what();
        } catch (const CudaError& e) {
            r.status = CaseStatus::error;
            r.message = e.what();
            r.hint = cuda_error_hint(e.code, task.id, shape);
            // Sticky faults (illegal address, launch failure, ...) poison the whole
            // context: every later CUDA call in this process fails too.
            (void)cudaGetLastError();
#ifdef CUDACPU_BACKEND
            // The CPU backend says which thread of which kernel did what, at which line: that is
            // the case's message (the suite shows it), and the hint need not send the student to
            // compute-sanitizer. Unlike a GPU context, it recovers: the next case still runs.
            const std::string report = cudacpu_last_diagnostic() ? cudacpu_last_diagnostic() : "";
            if (!report.empty()) {
                r.message += "\n  the CPU backend saw: " + report;
                cudacpu_clear_diagnostic();
                r.hint = cpu_report_hint(report, r.hint);
            }
            // A kernel that never finished still holds the CPU's workers: like a lost GPU context,
            // nothing more can run in this process. Every other fault is over once reported.
            if (e.code != cudaErrorLaunchTimeout) (void)cudacpu_clear_sticky_error();
#endif
            r.context_lost = cudaDeviceSynchronize() != cudaSuccess;
        } catch (const std::exception& e) {
            r.status = CaseStatus::error;
            r.message = e.what();
            (void)cudaGetLastError();
            r.context_lost = cudaDeviceSynchronize() != cudaSuccess;
        }
    }

    void check_runs() {
        w = allocate(task, t, shape, placement_for(o.fixed_placement, data != nullptr));
        fill_inputs(task, t, shape, w, o.seed, data);
        // Check runs, every one verified, on the same inputs. A deterministic kernel gives
        // bitwise equal outputs each time; a wrong result that also changes between
        // runs is the mark of a race.
        DeviceBuffer first_output;
        CheckResult first_check;           // the first run's, before the later runs' counts
        std::optional<CheckResult> later;  // the first wrong run after a right first one
        for (int run = 0; run < std::max(1, o.check_runs); ++run) {
            prepare_call();
#ifdef CUDACPU_BACKEND
            // On the CPU threads run in a fixed order unless told otherwise: each repeated run
            // takes another order (seeded), so a race changes the result between runs as on a GPU.
            cudacpu_set_schedule(run == 0 ? "default" : ("random:" + std::to_string(o.seed + run)).c_str());
#endif
            launch();
            wait_for_kernels(run == 0 ? "while running" : "on a repeated run");
            // A repeated run whose output is bitwise the first's, on the same inputs, compares with the
            // reference as the first did: only what it may have broken besides is checked again (the
            // float64 reference is not made a second time: on the CPU a tenth of a matmul case's time).
            const bool same = run > 0 && equal_on_device(first_output.get(), w.placed_output(), w.output_bytes());
            CheckResult c = same ? first_check : check_call(run == 0);
            if (same) check_inputs_and_guard(task, t, w, c);
            if (run == 0) {
                r.check = c;
                if (o.check_runs > 1) {
                    first_check = c;
                    first_output = DeviceBuffer(w.output_bytes());
                    CUDA_CHECK(cudaMemcpy(first_output.get(), w.placed_output(), w.output_bytes(),
                                          cudaMemcpyDeviceToDevice));
                }
            } else {
                r.check.runs_differ |= !same;
                if (!c.passed()) {
                    if (r.check.first_bad_run < 0) {
                        r.check.first_bad_run = run;
                        later = c;
                    }
                    ++r.check.runs_wrong;
                }
            }
            if (run == 0 && !c.passed()) {
                r.check.first_bad_run = 0;
                ++r.check.runs_wrong;
            }
            ++r.check.runs_checked;
            if (!c.modified_inputs.empty()) break;  // one is enough to tell
        }
        if (later) {  // the JSON's input and guard fields cover every run
            if (r.check.modified_inputs.empty()) r.check.modified_inputs = later->modified_inputs;
            r.check.written_past_end = std::max(r.check.written_past_end, later->written_past_end);
        }
        if (!r.check.passed()) {
            fail_with(r, r.check, w.layout);
            if (later) {
                r.message = later_run_message(*later, r.check, shape);
                if (later->wrong == 0 && !later->too_inaccurate()) r.hint = case_hint(*later, w.layout, shape);
            }
            // Outputs that change between runs point at a race, unless stores outside
            // the output explain them (they land on other threads' elements).
            if (r.check.wrong > 0 && r.check.runs_differ && r.check.written_past_end == 0)
                r.hint = race_hint() + (r.hint.empty() ? "" : " " + r.hint);
            return;
        }
        r.status = CaseStatus::ok;
        prepared = true;
    }

    void timed_runs(TimingOptions opts, L2Flusher& flusher, const DeviceLimits* limits) {
        if (r.sm_clock_mhz_before < 0) r.sm_clock_mhz_before = current_sm_clock_mhz(device);
        const int warmups_before = warmups_done, samples_before = samples_done;
        auto verify = [&](int run) {
            CheckResult c = check_call(false);
            ++r.check.runs_checked;
            if (!c.passed())
                throw TimedRunWrong{run < 0 ? "warm-up run " + std::to_string(warmups_before - run)
                                            : "timed run " + std::to_string(samples_before + run + 1),
                                    c};
        };
        opts.warmup_runs = std::max(0, opts.warmup_runs - warmups_done);  // warm up once per case
        TimingResult more;
        try {
            more = time_launcher([&] { launch(); }, [&] { prepare_fresh_call(); }, verify, opts, flusher, &device);
        } catch (const TimedRunWrong& bad) {
            CheckResult c = bad.check;
            c.runs_checked = r.check.runs_checked;
            c.runs_wrong = 1;
            c.first_bad_run = r.check.runs_checked - 1;
            fail_with(r, c, w.layout);
            const bool output_wrong = c.wrong > 0 || c.too_inaccurate();
            const int right_before = r.check.runs_checked - 1;  // every verified run before this one
            r.message = output_wrong ? "the output of " + bad.which + " was wrong, although the " +
                                           std::to_string(right_before) +
                                           (right_before == 1 ? " run before it was" : " runs before it were") +
                                           " right: results must be computed on every call; " + r.message
                                     : bad.which + ": " + r.message;
            if (output_wrong)
                r.hint = race_hint() + " Code that behaves differently when it is called again (state kept between "
                                       "calls, work skipped once the results are known) fails this way too.";
            prepared = false;
            return;
        }
        warmups_done += opts.warmup_runs;
        samples_done += static_cast<int>(more.samples_ms.size());
        TimingResult& all = r.timing ? *r.timing : r.timing.emplace();
        all.append(more);
        r.sm_clock_mhz_after = current_sm_clock_mhz(device);
        r.clock_limit_reasons = clock_limit_reasons(device);
        const double seconds = all.stats.median * 1e-3;
        if (seconds > 0) {
            r.throughput = (task.metric == Metric::gflops ? r.flops : r.bytes) / seconds / 1e9;
            if (limits) {
                const double limit = task.metric == Metric::gflops ? limits->sgemm_gflops : limits->copy_gbps;
                if (limit > 0) r.percent_of_limit = 100.0 * r.throughput / limit;
            }
        }
        if (limits) rate_plausibility(r, *limits);
    }
};

CaseRun::CaseRun(const Task& task, DType t, const Shape& shape, const CaseOptions& o, const DeviceInfo& device,
                 const DataCase* data)
    : s_(new State{task, t, shape, o, device, data, {}, {}}) {
    CaseResult& r = s_->r;
    r.task = task.id;
    r.dtype = t;
    r.shape = shape;
    r.seed = data ? data->seed : o.seed;
    r.source = data ? "data:" + data->label : "random";
    r.metric = task.metric;
    r.flops = task.flops(shape);
    r.bytes = task.min_bytes(shape, t);
}

CaseRun::~CaseRun() = default;

const CaseResult& CaseRun::check() {
    s_->guarded([&] { s_->check_runs(); });
    return s_->r;
}

const CaseResult& CaseRun::time(const TimingOptions& options, L2Flusher& flusher, const DeviceLimits* limits) {
    if (!s_->prepared) throw std::logic_error("CaseRun::time needs a case whose check passed");
    s_->guarded([&] { s_->timed_runs(options, flusher, limits); });
    if (s_->r.status != CaseStatus::ok) s_->prepared = false;
    return s_->r;
}

const CaseResult& CaseRun::result() const { return s_->r; }

bool CaseRun::ready_to_time() const { return s_->prepared; }

void rate_plausibility(CaseResult& r, const DeviceLimits& limits) {
    r.floor = limits.floor(r.flops, r.bytes);
    r.implausible = r.timing && !r.timing->samples_ms.empty() && r.timing->stats.median * 1e-3 < r.floor->seconds;
}

CaseResult run_case(const Task& task, DType t, const Shape& shape, const CaseOptions& o, const DeviceInfo& device,
                    const DeviceLimits* limits, L2Flusher& flusher, const DataCase* data) {
    CaseRun run(task, t, shape, o, device, data);
    run.check();
    if (o.time && run.ready_to_time()) run.time(o.timing, flusher, limits);
    return run.result();
}

CaseResult timeout_result(const Task& task, DType t, const Shape& shape, std::uint64_t seed, double seconds) {
    CaseResult r;
    r.task = task.id;
    r.dtype = t;
    r.shape = shape;
    r.seed = seed;
    r.metric = task.metric;
    r.status = CaseStatus::error;
    r.message = "no result after " + std::to_string(static_cast<int>(seconds)) +
                " s: the kernel probably never finishes";
    r.hint = "Look for a loop whose condition never becomes false, or a __syncthreads() that not every thread "
             "of the block reaches.";
    r.context_lost = true;
    return r;
}

DataCase load_data_case(const std::string& data_dir, const std::string& relative_dir, const Task& task, DType t,
                        const Shape& shape, std::uint64_t seed) {
    DataCase d;
    d.label = relative_dir;
    d.seed = seed;
    const std::string dir = data_dir + "/" + relative_dir + "/";
    const auto sizes = task.input_elements(shape);
    auto expect = [&](const NpyArray& a, const std::string& path, std::size_t elements) {
        if (a.dtype != t)
            throw DataFileError(path + ": holds " + dtype_name(a.dtype) + " but the case is " + dtype_name(t));
        if (a.elements() != elements)
            throw DataFileError(path + ": holds " + std::to_string(a.elements()) + " elements but shape " +
                                shape.str() + " needs " + std::to_string(elements));
    };
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::string path = dir + task.input_names[i] + ".npy";
        d.inputs.push_back(read_npy(path));
        expect(d.inputs.back(), path, sizes[i]);
    }
    const std::string path = dir + "expected.npy";
    d.expected = read_npy(path);
    expect(d.expected, path, task.output_layout(shape).elements());
    return d;
}
