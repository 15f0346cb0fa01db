"""Medians with distribution-free confidence intervals.

The same rule as the harness's stats.cpp: the 95% interval of the median of n
sorted values runs between the order statistics at ranks n/2 -+ 1.96 sqrt(n)/2
(Conover, "Practical Nonparametric Statistics", 3.2); below 6 values it is
the whole range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class MedianCI:
    median: float
    low: float
    high: float

    @property
    def relative_half_width(self) -> float:
        return (self.high - self.low) / 2 / self.median if self.median > 0 else math.inf


def median_ci(values: list[float]) -> MedianCI:
    if not values:
        raise ValueError("no values")
    x = sorted(values)
    n = len(x)
    median = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    spread = 1.96 * math.sqrt(n) / 2
    j = math.floor(n / 2 - spread)
    k = math.ceil(1 + n / 2 + spread)
    if n < 6 or j < 1:
        j = 1
    if n < 6 or k > n:
        k = n
    return MedianCI(median, x[j - 1], x[k - 1])
