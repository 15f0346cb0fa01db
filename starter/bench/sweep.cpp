#include "sweep.h"

#include <cmath>
#include <cstdio>

std::vector<Shape> sweep_shapes(ShapeKind kind, bool quick) {
    std::vector<Shape> shapes;
    if (kind == ShapeKind::vector) {
        const int last_power = quick ? 20 : 28;
        for (int p = 16; p <= last_power; p += 2) shapes.push_back(Shape::vector(std::int64_t(1) << p));
        return shapes;
    }
    const std::int64_t largest = quick ? 1024 : 8192;
    for (std::int64_t n = 256; n <= largest; n *= 2)
        shapes.push_back(kind == ShapeKind::gemm ? Shape::gemm(n, n, n) : Shape::matrix(n, n));
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
