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
#include <tuple>
#include <type_traits>
#include <vector>

#include "registry.h"
#include "task_list.h"
#include "task_unavailable.h"

// Defined by tools/link_tasks.py's marker object for a task file that did not build.
#define UNBUILT_MARKER(id, ...) extern "C" __attribute__((weak)) const char kernel_file_unbuilt_##id[];
HARNESS_TASKS(UNBUILT_MARKER, UNBUILT_MARKER)
#undef UNBUILT_MARKER

// task_list.h's parameter types must be tasks.h's: the stand-in below would otherwise define another
// overload, and the student's launcher would have no stand-in. Checked before the stand-ins exist, so
// that tasks.h's declaration is the only candidate.
#define SAME_AS_TASKS_H_PLAIN(id, params)                                                 \
    static_assert(std::is_same_v<decltype(id), void params>,                              \
                  #id ": task_list.h lists the parameters " #params ", not those tasks.h declares");
#define SAME_AS_TASKS_H_TEMPLATED(id, TYPES, instantiate, params)                                       \
    namespace {                                                                                         \
    template <typename T> constexpr bool id##_as_listed = std::is_same_v<decltype(id<T>), void params>; \
    template <typename... Ts> constexpr bool id##_all_as_listed(TypeList<void, Ts...>) {                \
        return (id##_as_listed<Ts> && ...);                                                             \
    }                                                                                                   \
    }                                                                                                   \
    static_assert(id##_all_as_listed(TYPE_LIST(TYPES){}),                                               \
                  #id ": task_list.h lists the parameters " #params ", not those tasks.h declares");
HARNESS_TASKS(SAME_AS_TASKS_H_PLAIN, SAME_AS_TASKS_H_TEMPLATED)
#undef SAME_AS_TASKS_H_PLAIN
#undef SAME_AS_TASKS_H_TEMPLATED

namespace {

const char* type_name(float*) { return "float"; }
const char* type_name(double*) { return "double"; }
const char* type_name(std::int32_t*) { return "std::int32_t"; }

[[noreturn]] void unavailable(const char* marker, const std::string& missing) {
    if (marker) throw TaskUnavailable(marker);
    throw TaskUnavailable(missing);
}

// "float, double and std::int32_t" from a type list of tasks.h.
template <typename... Ts>
std::string types_text(TypeList<void, Ts...>) {
    const std::vector<std::string> names = {type_name(static_cast<Ts*>(nullptr))...};
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return s;
}

template <typename T, typename Types>
std::string missing_instantiation(const char* task, Types types, const char* instantiate) {
    const std::string name = std::string(task) + "<" + type_name(static_cast<T*>(nullptr)) + ">";
    return std::string(task) + ".cu does not define " + name + ": the harness tests " + task + " on " +
           types_text(types) + ", so the file must instantiate it for each (end it with " + instantiate +
           ", as tasks.h shows)";
}

std::string missing_function(const char* task, const char* params) {
    return std::string(task) + ".cu does not define void " + task + params + " exactly as tasks.h declares it";
}

}  // namespace

// A plain launcher's stand-in is a weak definition. A templated one's is a definition of the template
// itself, instantiated here for each listed type: an instantiation is weak, and the student's (in an
// object linked before this one) is kept over it.
#define FALLBACK_PLAIN(id, params) \
    __attribute__((weak)) void id params { unavailable(kernel_file_unbuilt_##id, missing_function(#id, #params)); }
#define FALLBACK_TEMPLATED(id, TYPES, instantiate, params)                                                      \
    template <typename T>                                                                                       \
    void id params {                                                                                            \
        unavailable(kernel_file_unbuilt_##id,                                                                   \
                    missing_instantiation<T>(#id, TYPE_LIST(TYPES){}, #TYPES "(" #instantiate ")"));          \
    }                                                                                                           \
    namespace {                                                                                                 \
    template <typename... Ts>                                                                                   \
    constexpr auto id##_instances(TypeList<void, Ts...>) { return std::make_tuple(&id<Ts>...); }               \
    __attribute__((used)) const auto id##_instantiated = id##_instances(TYPE_LIST(TYPES){});                  \
    }
HARNESS_TASKS(FALLBACK_PLAIN, FALLBACK_TEMPLATED)
