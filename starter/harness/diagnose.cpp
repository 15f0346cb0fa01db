#include "diagnose.h"

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
    return "the results are far less accurate than " + c.type + " arithmetic gives: " + detail +
           " (half precision, bfloat16 and TF32 tensor cores give errors like this)";
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
    if (c.coarse_arithmetic())
        return "Every element is close to the right answer, but on average far less accurate than " + c.type +
               " allows. The assignment asks for plain " + c.type + " arithmetic: no __half or bfloat16 values, "
               "no tensor cores (wmma, mma), which round inputs or products to about three decimal digits.";
    if (c.wrong == 0 && c.runs_wrong > 0) return race_hint();
    if (c.wrong == 0) return "";
    if (scalar && c.unwritten == 1)
        return "The result was never written. The harness fills it with NaN before each run: set it "
               "(cudaMemsetAsync or a kernel) before you accumulate into it.";
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
