"""grader/core/metrics.py: the throughput, speedup and %-of-limit arithmetic every reader uses."""
from __future__ import annotations

import pandas as pd
import pytest

from grader.core import metrics
def test_throughput_is_work_per_second_in_giga_units():
    assert metrics.throughput(2e9, 1.0) == pytest.approx(2000.0)  # 2 GFLOP in 1 ms: 2 TFLOP/s
    assert metrics.throughput(1e9, 1000.0) == pytest.approx(1.0)


def test_milliseconds_is_throughputs_inverse():
    assert metrics.milliseconds(2e9, metrics.throughput(2e9, 3.5)) == pytest.approx(3.5)


def test_the_formulas_take_pandas_columns_as_they_take_numbers():
    work, ms = pd.Series([2e9, 1e9]), pd.Series([1.0, 2.0])
    assert list(metrics.throughput(work, ms)) == pytest.approx([2000.0, 500.0])
    assert list(metrics.percent_of_limit(metrics.throughput(work, ms), pd.Series([4000.0, 1000.0]))) == \
        pytest.approx([50.0, 50.0])


def test_speedup_is_the_solutions_time_over_the_students():
    assert metrics.speedup(2.0, 1.0) == 2.0 and metrics.speedup(1.0, 4.0) == 0.25


def test_the_limit_follows_the_unit_and_is_none_when_not_measured():
    limits = {"sgemm_fp32_gflops": 50000.0, "copy_bandwidth_gbps": 4000.0}
    assert metrics.device_limit(limits, "GFLOP/s") == 50000.0 and metrics.device_limit(limits, "GB/s") == 4000.0
    assert metrics.device_limit({}, "GB/s") is None and metrics.device_limit(limits, "") is None
    assert metrics.percent_of_limit(2000.0, None) is None
    assert metrics.percent_of_limit(2000.0, 4000.0) == 50.0
    assert (metrics.limit_name("GFLOP/s"), metrics.limit_name("GB/s")) == ("cuBLAS FP32", "copy bandwidth")
