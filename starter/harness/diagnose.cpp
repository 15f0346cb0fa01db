#include "diagnose.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

std::string format_number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

static std::string count_phrase(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

static std::string input_phrase(const std::vector<std::string>& names, const Shape& shape) {
    const bool vectors = shape.kind == ShapeKind::vector;
    std::string s = names.size() == 1 ? (vectors ? "input vector " : "input matrix ")
                                      : (vectors ? "input vectors " : "input matrices ");
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        std::string shown = n.size() == 1 ? n : "'" + n + "'";
        if (n.size() == 1 && !vectors) shown[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])));
        s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + shown;
    }
    return s;
}

static std::string coarse_arithmetic_text(const CheckResult& c) {
    const std::string detail =
        c.too_inaccurate()
            ? "the average error is " + format_number(std::round(c.mean_error)) + " units of " + c.type +
                  " rounding, where " + c.type + " stays below " +
                  format_number(std::round(c.mean_error_limit * 10) / 10)
            : count_phrase(c.wrong, "element is", "elements are") + " off by more than " + c.type +
                  " rounding allows, each by a little";
    // A float64 result this coarse has been through float32 somewhere; a float32 one through half or TF32.
    const std::string cause = c.type == "float64" ? " (float32 arithmetic gives errors like this: a float tile, "
                                                    "accumulator or temporary in a float64 kernel)"
                                                  : " (half precision, bfloat16 and TF32 tensor cores give errors "
                                                    "like this)";
    return "the results are far less accurate than " + c.type + " arithmetic gives: " + detail + cause;
}

// An int32 result a little off where the value is large: it went through float, which holds
// integers exactly only up to 2^24.
static bool looks_rounded_through_float(const CheckResult& c) {
    const double err = std::fabs(c.got - c.expected), big = 16777216.0;
    return c.type == "int32" && c.has_first_wrong && !c.first_unwritten && std::fabs(c.expected) > big && err > 0 &&
           err <= 1e-4 * std::fabs(c.expected);
}

std::string describe_failure(const CheckResult& c, const Shape& shape) {
    const bool scalar = shape.kind == ShapeKind::vector;
    if (!c.modified_inputs.empty() && c.wrong == 0 && !c.too_inaccurate())
        return "your kernel changed its " + input_phrase(c.modified_inputs, shape) + ": inputs must be left unchanged";
    if (c.wrong == 0 && c.written_past_end > 0)
        return "every element is right, but the call also wrote " +
               count_phrase(c.written_past_end, "element", "elements") + " past the end of the output";
    if (c.wrong == 0 && c.too_inaccurate() && !c.coarse_arithmetic())
        return "the results are less accurate than " + c.type + " arithmetic allows: the average error is " +
               format_number(std::round(c.mean_error)) + " units of " + c.type + " rounding, where " + c.type +
               " stays below " + format_number(std::round(c.mean_error_limit * 10) / 10);
    if (c.wrong == 0 && !c.too_inaccurate() && c.runs_wrong > 0)
        return "run " + std::to_string(c.first_bad_run + 1) + " of " + std::to_string(c.runs_checked) +
               " gave a wrong result although an earlier run was right";
    std::string s = c.coarse_arithmetic() ? coarse_arithmetic_text(c)
                    : c.wrong == c.elements && c.elements > 1
                        ? "all " + std::to_string(c.elements) + " elements are wrong"
                        : std::to_string(c.wrong) + " of " + count_phrase(c.elements, "element is", "elements are") +
                              " wrong";
    if (scalar && !c.coarse_arithmetic()) s = "the result is wrong";
    if (c.has_first_wrong) {
        if (!scalar)
            s += "; the first is at (row " + std::to_string(c.first_row) + ", col " + std::to_string(c.first_col) + ")";
        s += ": expected " + format_number(c.expected) + ", got " +
             (c.first_unwritten ? std::string("nothing (never written)") : format_number(c.got));
        if (c.bound > 0) s += " (allowed error " + format_number(c.bound) + ")";
    }
    if (!c.modified_inputs.empty()) s += "; your kernel also changed its " + input_phrase(c.modified_inputs, shape);
    return s;
}

std::string cuda_error_hint(int code, const std::string& task, const Shape& shape) {
    switch (static_cast<cudaError_t>(code)) {
        case cudaErrorInvalidValue:  // what the runtime says when grid.y or grid.z passes 65,535
            if (shape.kind == ShapeKind::vector || (shape.dims[0] <= 65535 && shape.dims[1] <= 65535)) return "";
            [[fallthrough]];
        case cudaErrorInvalidConfiguration: {
            std::string s = "The GPU refused the launch: a grid or block is over its limits (grid.y and grid.z at "
                            "most 65,535 blocks, grid.x at most 2^31 - 1, a block at most 1,024 threads).";
            if (shape.kind != ShapeKind::vector && (shape.dims[0] > 65535 || shape.dims[1] > 65535))
                s += " This shape has " + std::to_string(std::max(shape.dims[0], shape.dims[1])) +
                     " rows or columns: put the long dimension in grid.x (or let each block handle several "
                     "rows), not one block per row in grid.y.";
            return s;
        }
        case cudaErrorIllegalAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorMisalignedAddress:
        case cudaErrorLaunchFailure:
            return "Your kernel read or wrote memory outside the arrays it was given: an index past an end, or a "
                   "missing bounds check (`make memcheck TASK=" + task + "` names the line).";
        case cudaErrorLaunchOutOfResources:
            return "The block asks for more registers or shared memory than the GPU has for it: use fewer threads "
                   "per block, or less shared memory.";
        default:
            return "";
    }
}

std::string cpu_report_hint(const std::string& report, const std::string& hint) {
    // The race checker's report (a --racecheck build) is not a bad address: say what a race is.
    if (report.find(": data race on ") != std::string::npos)
        return report.find("Blocks run in no fixed order") != std::string::npos
                   ? "Threads of different blocks used the same location, at least one writing (the CPU backend's "
                     "report above names both): blocks are not ordered, so use atomicAdd where several update it."
                   : "Two threads of a block used the same location, at least one writing, with no __syncthreads() "
                     "between them (the CPU backend's report above names both).";
    const std::string::size_type at = hint.find(" (`make memcheck");
    return at == std::string::npos ? hint : hint.substr(0, at) + " (the CPU backend's report above names it).";
}

std::string race_hint() {
    return "Results that change from run to run usually mean a race: threads reading shared memory "
           "before every thread has written it (a missing __syncthreads()), or several threads or blocks "
           "updating the same location without atomics.";
}

std::string case_hint(const CheckResult& c, const OutputLayout& layout, const Shape& shape) {
    const bool scalar = shape.kind == ShapeKind::vector;
    if (!c.modified_inputs.empty())
        return "Your code wrote into an input array. Inputs are read-only: write only to the output (and keep "
               "any scratch space in memory of your own).";
    if (c.written_past_end > 0)
        return "Your kernel wrote " + count_phrase(c.written_past_end, "element", "elements") +
               " past the end of the output: a store is missing its bounds check (row < rows && col < cols).";
    if (c.coarse_arithmetic() && c.type == "float64")
        return "Every element is close to the right answer, but only as accurate as float32 gives: somewhere your "
               "float64 kernel keeps values in float (a shared-memory tile, the accumulator, a temporary, or a "
               "literal type in a cast), which rounds them to about 7 of float64's 16 digits. Use the template's "
               "type T for every value.";
    if (c.coarse_arithmetic())
        return "Every element is close to the right answer, but on average far less accurate than " + c.type +
               " allows. The assignment asks for plain " + c.type + " arithmetic: no __half or bfloat16 values, "
               "no tensor cores (wmma, mma), which round inputs or products to about three decimal digits.";
    if (looks_rounded_through_float(c))
        return "Where the values are large the result is off by a little (expected " + format_number(c.expected) +
               ", got " + format_number(c.got) + "): the int32 values went through float, which holds whole "
               "numbers exactly only up to 16,777,216. Keep int32 data in the template's type T (no float "
               "tiles, accumulators or casts).";
    if (c.wrong == 0 && c.runs_wrong > 0) return race_hint();
    if (c.wrong == 0) return "";
    if (scalar && c.unwritten == 1)
        return "The result was never written. The harness fills it with NaN before each run: set it "
               "(cudaMemsetAsync or a kernel) before you accumulate into it.";
    if (scalar && c.expected != 0 && std::fabs(c.got / c.expected - 1) < 0.01)
        return "The result is close to the expected sum, but further off than " + c.type + " rounding allows "
               "over this many terms: the sum was accumulated in lower precision. One accumulator that adds "
               "millions of terms stops counting the small ones once it is large; sum in stages (each thread "
               "its share, then a tree in shared memory per block, then the blocks' sums).";
    if (scalar && c.got > 0 && c.got < c.expected)
        return "The result is only " + format_number(std::round(100 * c.got / c.expected)) +
               "% of the expected sum: partial sums were lost. Several blocks adding to *result without "
               "atomicAdd is a race in which updates get lost; also check that every thread's sum reaches its "
               "block's total.";
    if (c.unwritten == c.wrong)
        return count_phrase(c.unwritten, "element was", "elements were") + " never written (" +
               (c.unwritten == 1 ? "it still holds" : "they still hold") +
               " the value the harness puts in the output before each run). "
               "Does your grid cover every element? Round the number of blocks up: (cols + block.x - 1) / block.x.";
    if (layout.rows == layout.cols && layout.rows > 1 && c.matches_transposed == c.elements)
        return "Your output is the transpose of the right answer: the row and column indices are swapped.";
    for (int t = 0; t < kEdgeTileCount; ++t)
        if (c.wrong_in_edge[t] == c.wrong && c.wrong < c.elements) {
            const std::int64_t T = edge_tile(t);
            std::string where;
            if (layout.rows > T && layout.rows % T) where += "rows >= " + std::to_string(layout.rows - layout.rows % T);
            if (layout.cols > T && layout.cols % T)
                where += std::string(where.empty() ? "" : " or ") + "columns >= " +
                         std::to_string(layout.cols - layout.cols % T);
            return "Every wrong element lies in the last, partial " + std::to_string(T) + "-wide tile (" + where +
                   "): check the bounds when a tile hangs over the edge of the matrix.";
        }
    if (c.nonfinite > c.unwritten)
        return count_phrase(c.nonfinite - c.unwritten, "result is", "results are") +
               " NaN or infinite: reading shared memory nothing wrote, or reading past the end of an array?";
    if (c.unwritten > 0)
        return count_phrase(c.unwritten, "element was", "elements were") +
               " never written: does your grid cover every element?";
    if (c.wrong == c.elements && c.elements > 1)
        return "Every element is wrong: check the index formula (row * cols + col for row-major) and which "
               "thread computes which element.";
    return "";
}

std::string tile_pattern_hint(const std::vector<ShapeOutcome>& outcomes) {
    bool any_failed = false;
    for (const auto& o : outcomes) any_failed |= !o.passed;
    if (!any_failed) return "";
    for (int t = 0; t < kEdgeTileCount; ++t) {
        const std::int64_t T = edge_tile(t);
        bool fits = true, some_multiple_passed = false;
        for (const auto& o : outcomes) {
            const int rank = o.shape.kind == ShapeKind::gemm ? 3 : o.shape.kind == ShapeKind::matrix ? 2 : 1;
            bool all_multiples = true;
            for (int i = 0; i < rank; ++i) all_multiples &= o.shape.dims[i] % T == 0;
            if (all_multiples && !o.passed) fits = false;
            if (all_multiples && o.passed) some_multiple_passed = true;
        }
        if (fits && some_multiple_passed)
            return "Only shapes with a size that is not a multiple of " + std::to_string(T) +
                   " failed (every shape whose sizes are all multiples of " + std::to_string(T) +
                   " passed): check the bounds in your last, partial tile (load 0 outside the matrix, "
                   "store only where row < rows && col < cols).";
    }
    return "";
}
