// Stand-ins for the launchers a submission does not provide, so that one broken
// task file costs its own task, not the whole build. Every definition here is
// weak and this object is linked after the student's kernel objects: a launcher
// the student's file defines always wins (weak or not), and one it does not
// define (say matmul_naive<double> from a file that instantiates only float, or
// every launcher of a file that did not compile) comes from here and reports why
// when it is called. tools/link_tasks.py links a marker object in place of a
// file that does not compile or link, carrying the compiler's or linker's first
// message; the stand-ins pass that message on.
//
// The policy (documented in tasks.h and the handout): a missing instantiation
// fails only that element type's cases; a file that does not build fails every
// case of its task.
#include <string>
#include <vector>

#include "task_unavailable.h"
#include "tasks.h"

// Defined by tools/link_tasks.py's marker object for a task file that did not build.
#define UNBUILT_MARKER(stem) extern "C" __attribute__((weak)) const char kernel_file_unbuilt_##stem[];
UNBUILT_MARKER(fill)
UNBUILT_MARKER(add)
UNBUILT_MARKER(transpose)
UNBUILT_MARKER(matmul_naive)
UNBUILT_MARKER(matmul_tiled)
UNBUILT_MARKER(matmul_fast)
UNBUILT_MARKER(dot)

namespace {

const char* type_name(float*) { return "float"; }
const char* type_name(double*) { return "double"; }
const char* type_name(std::int32_t*) { return "std::int32_t"; }

[[noreturn]] void unavailable(const char* marker, const std::string& missing) {
    if (marker) throw TaskUnavailable(marker);
    throw TaskUnavailable(missing);
}

// "float, double and std::int32_t" from a type list of tasks.h.
std::string types_text(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return s;
}
#define TYPE_NAME_OF(T) type_name(static_cast<T*>(nullptr)),

template <typename T>
std::string missing_instantiation(const char* task, const std::vector<std::string>& types, const char* instantiate) {
    const std::string name = std::string(task) + "<" + type_name(static_cast<T*>(nullptr)) + ">";
    return std::string(task) + ".cu does not define " + name + ": the harness tests " + task + " on " +
           types_text(types) + ", so the file must instantiate it for each (end it with " + instantiate +
           ", as tasks.h shows)";
}

// Each task's element types, named as in C++ (the macros of tasks.h are expanded here,
// outside the stand-ins, which are themselves made by expanding them).
const std::vector<std::string> kAddTypes = {ADD_TYPES(TYPE_NAME_OF)};
const std::vector<std::string> kTransposeTypes = {TRANSPOSE_TYPES(TYPE_NAME_OF)};
const std::vector<std::string> kMatmulTypes = {MATMUL_TYPES(TYPE_NAME_OF)};

std::string missing_function(const char* task, const char* signature) {
    return std::string(task) + ".cu does not define " + signature + " exactly as tasks.h declares it";
}

}  // namespace

__attribute__((weak)) void fill(std::int32_t*, int, int) {
    unavailable(kernel_file_unbuilt_fill, missing_function("fill", "void fill(std::int32_t*, int, int)"));
}

__attribute__((weak)) void matmul_fast(const float*, const float*, float*, int, int, int) {
    unavailable(kernel_file_unbuilt_matmul_fast,
                missing_function("matmul_fast", "void matmul_fast(const float*, const float*, float*, int, int, int)"));
}

__attribute__((weak)) void dot(const float*, const float*, float*, int) {
    unavailable(kernel_file_unbuilt_dot, missing_function("dot", "void dot(const float*, const float*, float*, int)"));
}

#define FALLBACK_ADD(T)                                                                                          \
    template <> __attribute__((weak)) void add<T>(const T*, const T*, T*, int, int) {                            \
        unavailable(kernel_file_unbuilt_add,                                                                     \
                    missing_instantiation<T>("add", kAddTypes, "ADD_TYPES(INSTANTIATE_ADD)"));           \
    }
#define FALLBACK_TRANSPOSE(T)                                                                                    \
    template <> __attribute__((weak)) void transpose<T>(const T*, T*, int, int) {                                \
        unavailable(kernel_file_unbuilt_transpose,                                                               \
                    missing_instantiation<T>("transpose", kTransposeTypes,                \
                                             "TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)")); \
    }
#define FALLBACK_MATMUL_NAIVE(T)                                                                                 \
    template <> __attribute__((weak)) void matmul_naive<T>(const T*, const T*, T*, int, int, int) {              \
        unavailable(kernel_file_unbuilt_matmul_naive,                                                            \
                    missing_instantiation<T>("matmul_naive", kMatmulTypes,                          \
                                             "MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)"));                         \
    }
#define FALLBACK_MATMUL_TILED(T)                                                                                 \
    template <> __attribute__((weak)) void matmul_tiled<T>(const T*, const T*, T*, int, int, int) {              \
        unavailable(kernel_file_unbuilt_matmul_tiled,                                                            \
                    missing_instantiation<T>("matmul_tiled", kMatmulTypes,                          \
                                             "MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)"));                         \
    }

ADD_TYPES(FALLBACK_ADD)
TRANSPOSE_TYPES(FALLBACK_TRANSPOSE)
MATMUL_TYPES(FALLBACK_MATMUL_NAIVE)
MATMUL_TYPES(FALLBACK_MATMUL_TILED)
