// The task registry: the one place each task is described. The CLI, the
// student suite (make test), the JSON output and, through
// `harness --list-tasks --json`, the Python grader all read it from here.
//
// A task's file in harness/tasks/ fills in a Task: what it computes (its
// float64 references on the CPU and on the GPU), how to call the student's
// launcher, how much work and traffic one call costs, how results are
// compared, and which shapes it is tested and timed on.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "counter_rng.h"
#include "dtype.h"
#include "shape.h"
#include "tolerance.h"

// The output as a matrix, for reporting (row, col) of a wrong element.
struct OutputLayout {
    std::int64_t rows = 1, cols = 1;
    std::size_t elements() const { return static_cast<std::size_t>(rows * cols); }
};

enum class Metric { gflops, gbps };  // what a timing row reports
const char* metric_unit(Metric m);   // "GFLOP/s", "GB/s"

// Pointers handed between the engine and a task. Inputs and output are device
// arrays of the case's element type; ref and magnitude are float64 arrays with
// one entry per output element (see tolerance.h for what "magnitude" means).
struct DeviceArgs {
    std::vector<const void*> inputs;
    void* output = nullptr;
};

struct HostReference {
    std::vector<double> value;
    std::vector<double> magnitude;
};

struct Task {
    std::string id;          // used everywhere: CLI, tests, rubric, grader, leaderboard
    std::string summary;     // one line for people
    std::string file;        // the student's file, relative to the kernels directory
    ShapeKind shape_kind = ShapeKind::matrix;
    std::vector<DType> dtypes;
    Tolerance tolerance;
    Distribution distribution = Distribution::signed_unit;
    Metric metric = Metric::gbps;

    std::vector<Shape> test_shapes;   // the student suite and the grader's correctness runs
    std::vector<Shape> bench_shapes;  // timed by `make demo` / `make bench`
    std::vector<Shape> data_shapes;   // the small reference cases stored in data/

    std::vector<std::string> input_names;                                   // e.g. {"a", "b"}
    std::function<std::vector<std::size_t>(const Shape&)> input_elements;  // one per input
    std::function<OutputLayout(const Shape&)> output_layout;
    std::function<double(const Shape&)> terms_summed;  // K in the tolerance model
    std::function<double(const Shape&)> flops;
    std::function<double(const Shape&, DType)> min_bytes;  // each input read once, output written once

    // Calls the student's launcher for element type `t`.
    std::function<void(DType t, const Shape&, const DeviceArgs&)> launch;
    // float64 reference from inputs converted to double (small shapes).
    std::function<HostReference(const Shape&, const std::vector<std::vector<double>>& inputs)> reference_host;
    // float64 reference on the GPU (any shape): writes value and magnitude.
    std::function<void(DType t, const Shape&, const DeviceArgs&, double* value, double* magnitude)> reference_device;
};

// The element types of a templated task, from the list in tasks.h:
//   using Types = TYPE_LIST(ADD_TYPES);   // TypeList<void, float, std::int32_t>
// (the leading void only makes the macro expansion well-formed).
template <typename... Ts> struct TypeList {};
#define TYPE_LIST_ITEM(T) , T
#define TYPE_LIST(TYPES) TypeList<void TYPES(TYPE_LIST_ITEM)>

template <typename... Ts>
std::vector<DType> dtypes_of(TypeList<void, Ts...>) { return {dtype_of<Ts>...}; }

// Calls f(TypeTag<T>{}) for the listed type T behind `d`. Unlike
// dispatch_dtype it instantiates f only for the listed types, so it may call a
// student's template, which is compiled for exactly those.
template <typename... Ts, typename F>
void dispatch_listed(TypeList<void, Ts...>, DType d, F&& f) {
    const bool found = ((d == dtype_of<Ts> ? (f(TypeTag<Ts>{}), true) : false) || ...);
    if (!found) throw std::logic_error(std::string("element type ") + dtype_name(d) + " is not one of this task's");
}

const std::vector<Task>& all_tasks();
const Task* find_task(const std::string& id);  // nullptr if unknown
std::string task_ids_joined(const char* sep = ", ");
