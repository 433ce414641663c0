"""iterate's words for a run are `kernelscope bench`'s (protocol/bench.py `verdict_label`):
its summary line, which is also the commit's message, and the CLI's first line."""

from __future__ import annotations

import pytest

from kernelscope.daemon.cli.iterate import print_iteration
from kernelscope.daemon.engine.workflows.iterate import Iteration
from kernelscope.protocol.bench import judged_nothing
from kernelscope.protocol.commands import IterationResult
from tests.support.bench_fixtures import bench_result

RECORD = {"optimization": {"action_category": "tiling"}, "performance": {"latency_us": None}}


@pytest.mark.parametrize(
    "kind,status,expected",
    [
        ("out_of_memory", "error", "V3: STOPPED (out_of_memory) | tiling"),
        ("resource_limit", "error", "V3: STOPPED (resource_limit) | tiling"),
        ("wrong_result", "gate_failed", "V3: FAIL (wrong_result) | tiling"),
    ],
)
def test_the_summary_line_says_bench_s_word(kind: str, status: str, expected: str) -> None:
    """The summary line (the commit's message too) says bench's word for a recorded run: STOPPED
    for a cap, FAIL for a failed gate. It once wrote `V3: FAIL (setup)` for a run that judged
    nothing; such a run (setup, unsupported, a dead worker, an interruption) now raises
    NothingJudged before any summary line and takes no commit, so only recorded kinds are here."""
    result = bench_result(kind, status)
    assert not judged_nothing(result)  # recorded, so its line is the commit's message
    assert Iteration._summary_line("v3", result, RECORD, "v0") == expected


def test_the_cli_s_first_line_says_bench_s_word(capsys: pytest.CaptureFixture[str]) -> None:
    """`kernelscope iterate` printed `v3: FAIL` for a run stopped by its memory cap."""
    result = IterationResult(
        workspace="ws",
        version="v3",
        passed=False,
        mode="interpreter",
        memory_path="memory/v3.json",
        verdict="STOPPED (out_of_memory)",
        exit_status=4,
    )
    print_iteration(result)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("v3: STOPPED (out_of_memory)"), first
