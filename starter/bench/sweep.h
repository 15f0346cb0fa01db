// The sizes `make bench` sweeps, and the rule that stops it growing a size
// that would take too long.
//
// Matrix tasks run on square n x n matrices, the matmuls on n x n x n, both
// for n = 256, 512, ..., 8192; dot on vectors of 2^16, 2^18, ..., 2^28
// elements. --quick keeps the three smallest of each.
//
// A run at the next size is predicted from the last measured one, scaled by
// the work (flops or bytes): a naive matmul at 23 ms for 4096^3 predicts
// 188 ms at 8192^3. When the prediction is over the per-run budget, that
// size (and every larger one) gets a "skipped" row with the reason instead of
// a measurement, so a slow kernel cannot make the bench take minutes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shape.h"

std::vector<Shape> sweep_shapes(ShapeKind kind, bool quick);

// The n that names a sweep shape: n of n x n, of n x n x n, or of a vector of n.
std::int64_t shape_size(const Shape& s);

// The last size an implementation was measured at.
struct MeasuredRun {
    std::int64_t size = 0;
    double ms = 0;    // one run
    double work = 0;  // flops or bytes of that run
};

// Why the run at the next size (of `next_work`) is skipped, or nothing when it
// fits in `budget_ms`. `budget_option` names the option that sets the budget.
std::optional<std::string> skip_reason(const std::optional<MeasuredRun>& last, double next_work, double budget_ms,
                                       const std::string& budget_option);

// "190 ms", "2.4 s": a duration for people.
std::string format_ms(double ms);
