#include "registry.h"

#include <algorithm>
#include <cmath>

#include "task_list.h"

// Each task's factory, defined in its file of harness/tasks/.
#define DECLARE_MAKE_TASK(id, ...) Task make_##id##_task();
HARNESS_TASKS(DECLARE_MAKE_TASK, DECLARE_MAKE_TASK)
#undef DECLARE_MAKE_TASK

const char* metric_unit(Metric m) { return m == Metric::gflops ? "GFLOP/s" : "GB/s"; }

const char* int_range_name(IntRange r) {
    switch (r) {
        case IntRange::full: return "full";
        case IntRange::sum_of_two: return "sum_of_two";
        case IntRange::products_of_k: return "products_of_k";
    }
    return "?";
}

std::int64_t int_bound(IntRange r, double k_terms) {
    constexpr std::int64_t kMax = 2147483647;  // 2^31 - 1
    switch (r) {
        case IntRange::full: return kMax;
        case IntRange::sum_of_two: return kMax / 2;
        case IntRange::products_of_k: {
            // The largest B with K * B^2 <= 2^31 - 1, in integers: no rounding for the bound to get wrong.
            const std::int64_t k = std::max<std::int64_t>(1, static_cast<std::int64_t>(k_terms)), room = kMax / k;
            std::int64_t b = static_cast<std::int64_t>(std::sqrt(static_cast<double>(room)));
            while (b * b > room) --b;
            while ((b + 1) * (b + 1) <= room) ++b;
            return std::max<std::int64_t>(1, b);
        }
    }
    return 1;
}

std::vector<std::pair<std::string, const std::vector<Shape>*>> named_shape_sets(const ShapeSets& s) {
    return {{"graded", &s.graded}, {"test", &s.test}, {"timed", &s.timed},
            {"sanitize", &s.sanitize}, {"sweep", &s.sweep}, {"data", &s.data},
            {"profile", &s.profile}};
}

const std::vector<Shape>* find_shape_set(const ShapeSets& s, const std::string& name) {
    for (const auto& [n, set] : named_shape_sets(s))
        if (n == name) return set;
    return nullptr;
}

std::string shape_set_names_joined(const char* sep) {
    std::string out;
    for (const auto& entry : named_shape_sets(ShapeSets{})) out += (out.empty() ? "" : sep) + entry.first;
    return out;
}

namespace {

// A factory whose task does not carry the list's id is a copy-paste slip in a new task's file: the id is also
// the student's file name and the fallback launchers' name, so say which, once, instead of grading under it.
Task listed(Task t, const char* id) {
    if (t.id != id) throw std::logic_error("make_" + std::string(id) + "_task() returns the task '" + t.id +
                                           "': the id in task_list.h and in its harness/tasks/ file must be the same");
    return t;
}

}  // namespace

// The list of tasks, in the order students meet them (task_list.h).
const std::vector<Task>& all_tasks() {
#define LISTED_TASK(id, ...) listed(make_##id##_task(), #id),
    static const std::vector<Task> tasks = {HARNESS_TASKS(LISTED_TASK, LISTED_TASK)};
#undef LISTED_TASK
    return tasks;
}

const Task* find_task(const std::string& id) {
    for (const Task& t : all_tasks())
        if (t.id == id) return &t;
    return nullptr;
}

std::string task_ids_joined(const char* sep) {
    std::string s;
    for (const Task& t : all_tasks()) s += (s.empty() ? "" : sep) + t.id;
    return s;
}
