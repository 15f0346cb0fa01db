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

// How large int32 inputs may be (counter_rng.h's bound B) so that the task's
// result cannot overflow int32 whatever the order of its operations:
//   full:          B = 2^31 - 1            (the value is copied: transpose)
//   sum_of_two:    B = 2^30 - 1            (|a + b| <= 2^31 - 2: add)
//   products_of_k: B = floor(sqrt((2^31 - 1) / K)), K terms summed (K B^2 <= 2^31 - 1: matmul)
enum class IntRange { full, sum_of_two, products_of_k };
const char* int_range_name(IntRange r);  // "full", "sum_of_two", "products_of_k"
std::int64_t int_bound(IntRange r, double k_terms);

// A task's named shape sets: the one place a shape list is written. The rubric
// names them, the student suite, the grader, make bench, data/ and the handout
// read them (through registry.json, `harness --list-tasks --json`).
struct ShapeSets {
    std::vector<Shape> graded;    // the grader's correctness cases
    std::vector<Shape> test;      // make test: every graded shape, and shapes whose failures name a tile width
    std::vector<Shape> timed;     // the grader's timed cases; the harness's default suite
    std::vector<Shape> sanitize;  // the small case compute-sanitizer checks (one)
    std::vector<Shape> sweep;     // make bench's sizes
    std::vector<Shape> data;      // the small reference cases stored in data/
    std::vector<Shape> profile;   // make profile's case: the performance counters' shape (one)
};
// The sets by name, in a fixed order ("graded", "test", "timed", "sanitize", "sweep", "data", "profile").
std::vector<std::pair<std::string, const std::vector<Shape>*>> named_shape_sets(const ShapeSets& s);
const std::vector<Shape>* find_shape_set(const ShapeSets& s, const std::string& name);  // nullptr if unknown
std::string shape_set_names_joined(const char* sep = ", ");

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
    IntRange int_range = IntRange::full;
    Metric metric = Metric::gbps;

    ShapeSets shapes;

    std::vector<std::string> input_names;                                   // e.g. {"a", "b"}
    std::function<std::vector<std::size_t>(const Shape&)> input_elements;  // one per input
    std::function<OutputLayout(const Shape&)> output_layout;
    std::function<double(const Shape&)> terms_summed;  // K in the tolerance model and in IntRange
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

// The bound B on int32 inputs of this task at this shape (IntRange).
inline std::int64_t int_bound(const Task& t, const Shape& s) { return int_bound(t.int_range, t.terms_summed(s)); }

const std::vector<Task>& all_tasks();
const Task* find_task(const std::string& id);  // nullptr if unknown
std::string task_ids_joined(const char* sep = ", ");
