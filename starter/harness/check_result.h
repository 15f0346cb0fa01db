// What the comparison of one output with its reference found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device_ops.h"  // kEdgeTileCount

struct CheckResult {
    std::size_t elements = 0;
    std::size_t wrong = 0;      // outside the tolerance, NaN or infinite
    std::size_t unwritten = 0;  // still holding the poison value
    std::size_t nonfinite = 0;
    std::size_t wrong_in_edge[kEdgeTileCount] = {};  // wrong and inside the last partial tile
    std::size_t matches_transposed = 0;              // square outputs only

    bool has_first_wrong = false;
    std::int64_t first_index = -1, first_row = -1, first_col = -1;  // flat index, and as (row, col)
    double expected = 0, got = 0, bound = 0;
    bool first_unwritten = false;

    double worst_ratio = 0;  // max |got - expected| / bound over all elements (inf: exact mismatch)
    // The statistical rule (tolerance.h): the mean of |got - expected| / (u·m) and
    // its limit for this case; a limit of 0 means the task has no such rule.
    double mean_error = 0, mean_error_limit = 0;
    double worst_relative = 0;  // max |got - expected| / m: how coarse the worst error is
    double coarse_limit = 0;    // worst_relative up to which a failure is coarse arithmetic (tolerance.h); 0: n/a
    std::string type = "float32";  // the element type's name, for messages

    std::vector<std::string> modified_inputs;  // inputs the call wrote into
    std::size_t written_past_end = 0;          // elements of the guard region after the output that changed
    int runs_checked = 0;                      // verified runs of this case (check runs and timed runs)
    int runs_wrong = 0;                        // of those, how many were wrong
    int first_bad_run = -1;                    // index of the first wrong verified run
    bool runs_differ = false;  // two check runs gave bitwise different outputs

    // Only as accurate as something coarser than the element type (half, TF32).
    bool too_inaccurate() const { return mean_error_limit > 0 && !(mean_error <= mean_error_limit); }
    // Failing while every element is still close to right: the pattern of
    // coarser arithmetic (half, TF32), not of a wrong index (tolerance.h).
    bool coarse_arithmetic() const {
        return (wrong > 0 || too_inaccurate()) && coarse_limit > 0 && nonfinite == 0 && unwritten == 0 &&
               worst_relative <= coarse_limit;
    }

    bool passed() const {
        return wrong == 0 && !too_inaccurate() && modified_inputs.empty() && written_past_end == 0 && runs_wrong == 0;
    }
};
