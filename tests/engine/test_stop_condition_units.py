"""A README stop condition checked by `kernelscope iterate`: its target and its unit agree.

The README's `bandwidth >= 4.32TB/s` was recorded as `"target": 4320.0, "unit": "TB/s"` (the
value converted to GB/s, the unit left as written) and printed `measured - vs 4320` with no
unit. The target is in the canonical unit (GB/s, TFLOPS, us) and so is the unit named beside
it; a record written before says the written unit beside the canonical value, and is read so.
"""

from __future__ import annotations

from kernelscope.daemon.engine.views.command_answers import stop_condition_line
from kernelscope.daemon.engine.workflows.iterate import evaluate_stop_conditions
from kernelscope.daemon.engine.workspace.readme import parse_readme
from kernelscope.protocol.bench import BenchResult, ConfigResult
from kernelscope.protocol.commands import StopConditionStatus

README = "# t\n\n## Stop Conditions\n- memory-bound target: bandwidth >= 4.32TB/s\n- latency <= 0.5 ms\n"


def bench(gbps: float) -> BenchResult:
    config = ConfigResult(name="n=4096", passed=True, gbps=gbps, candidate_ms=0.4)
    return BenchResult(
        status="ok",
        passed=True,
        mode="gpu",
        workspace="/w",
        candidate="/w/kernel.py",
        baseline="reference",
        entry_point="kernel_fn",
        configs=[config],
    )


def test_a_target_is_recorded_and_printed_in_the_unit_of_its_value() -> None:
    (bandwidth, latency), met = evaluate_stop_conditions(parse_readme(README), bench(3870.0))
    assert (bandwidth.target, bandwidth.unit, bandwidth.measured) == (4320.0, "GB/s", 3870.0)
    assert (latency.target, latency.unit) == (500.0, "us") and latency.met and not met
    line = stop_condition_line(bandwidth)
    assert line.endswith("not met, measured 3870 vs 4320 GB/s"), line
    assert stop_condition_line(latency).endswith("met, measured 400 vs 500 us")


def test_a_record_written_before_reads_its_target_in_the_canonical_unit() -> None:
    old = {
        "text": "memory-bound target: bandwidth >= 4.32TB/s",
        "kind": "bandwidth",
        "target": 4320.0,
        "unit": "TB/s",
        "measured": None,
        "met": False,
        "note": None,
    }
    status = StopConditionStatus.model_validate(old)
    assert (status.target, status.unit) == (4320.0, "GB/s")
    assert stop_condition_line(status).endswith("measured - vs 4320 GB/s")
