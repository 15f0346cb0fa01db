// Turns what a check found into words a student can act on.
#pragma once

#include <string>
#include <vector>

#include "check_result.h"
#include "registry.h"
#include "shape.h"

// "12 of 561 elements are wrong; the first is at (row 16, col 0): expected 1.25, got 0.75 (allowed error 3.8e-06)"
// `shape` tells a scalar result (dot) from a matrix that happens to be 1 x 1.
std::string describe_failure(const CheckResult& c, const Shape& shape);

// A hint from the pattern of wrong elements in one case, or "" when none fits.
std::string case_hint(const CheckResult& c, const OutputLayout& layout, const Shape& shape);

// What results that change from run to run usually mean.
std::string race_hint();
// The hint for a case the CPU backend stopped with a report (its message): a race, or the memory hint
// without the compute-sanitizer advice (the report already names the line).
std::string cpu_report_hint(const std::string& report, const std::string& hint);

// What a CUDA error from the student's launch or kernel usually means (its cudaError_t
// code), or "" when there is nothing to add to CUDA's own words.
std::string cuda_error_hint(int code, const std::string& task, const Shape& shape);

// A hint from which shapes of a task passed and failed: when every failing
// shape has a dimension that is not a multiple of some tile width T and every
// shape whose dimensions are all multiples of T passed, the bounds checks for
// the last, partial tile are the likely culprit. "" when no such T exists.
struct ShapeOutcome {
    Shape shape;
    bool passed = false;
};
std::string tile_pattern_hint(const std::vector<ShapeOutcome>& outcomes);

// A number the way a student reads it: integers plainly, others with 6 significant digits.
std::string format_number(double v);
