// Summary statistics of timing samples.
#pragma once

#include <vector>

struct SampleStats {
    int samples = 0;
    double median = 0, min = 0, mean = 0, stddev = 0;
    // Half-width of a distribution-free 95% confidence interval for the median:
    // the order statistics at ranks n/2 -+ 1.96 sqrt(n)/2 (Conover, "Practical
    // Nonparametric Statistics", 3.2). With fewer than 6 samples it is half the range.
    double ci95_half_width = 0;
    double relative_ci() const { return median > 0 ? ci95_half_width / median : 0; }
};

SampleStats summarize(std::vector<double> samples);
