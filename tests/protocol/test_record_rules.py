"""The one score formatter and KernelBench's excessive-speedup flag (issue #25 item 3): a
speedup over the reference above 10x says "check before trusting" wherever it is written."""

from __future__ import annotations

from kernelscope.protocol.record_rules import EXCESSIVE_SPEEDUP, check_before_trusting, format_score


def test_speedups_over_the_reference_above_ten_are_flagged() -> None:
    assert EXCESSIVE_SPEEDUP == 10.0  # KernelBench eval.py excessive_speedup_threshold
    assert check_before_trusting(10.0) is None and check_before_trusting(None) is None
    flag = check_before_trusting(12.5)
    assert flag and flag.startswith("check before trusting: 12.50x over the reference")
    assert format_score(12.5, versus="reference") == "12.50x vs reference (check before trusting)"
    assert format_score(9.99, versus="reference") == "9.99x vs reference"


def test_speedups_over_a_version_are_not() -> None:
    # ten times faster than a naive v0 is what optimization does; only the reference is KernelBench's bar
    assert format_score(35.78, versus="v0") == "35.78x vs v0"
    assert format_score(1.16, "latency_ratio") == "latency ratio 1.16x"
