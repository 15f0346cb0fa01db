#include "sweep.h"

#include <algorithm>
#include <cmath>

#include "tasks/shape_sets.h"
#include <cstdio>

// The registry's sweep (harness/tasks/shape_sets.h); --quick keeps its small end.
std::vector<Shape> sweep_shapes(ShapeKind kind, bool quick) {
    std::vector<Shape> shapes = sweep_shapes_of(kind);
    if (quick) {
        const std::int64_t largest = kind == ShapeKind::vector ? (std::int64_t(1) << 20) : 1024;
        shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [&](const Shape& s) { return s.dims[0] > largest; }),
                     shapes.end());
    }
    return shapes;
}

std::int64_t shape_size(const Shape& s) { return s.kind == ShapeKind::vector ? s.n() : s.dims[0]; }

std::string format_ms(double ms) {
    char text[32];
    if (ms < 1000) std::snprintf(text, sizeof text, "%.3g ms", ms);
    else std::snprintf(text, sizeof text, "%.3g s", ms / 1000);
    return text;
}

std::optional<std::string> skip_reason(const std::optional<MeasuredRun>& last, double next_work, double budget_ms,
                                       const std::string& budget_option) {
    if (!last || last->work <= 0) return std::nullopt;
    const double ratio = next_work / last->work;
    const double predicted = last->ms * ratio;
    if (predicted <= budget_ms) return std::nullopt;
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.3g", ratio);
    return "skipped: one run would take about " + format_ms(predicted) + " (" + format_ms(last->ms) + " at " +
           std::to_string(last->size) + ", " + scale + "x the work), over the bench's " + format_ms(budget_ms) +
           " per-run budget (" + budget_option + ")";
}
