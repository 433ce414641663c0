"""A workspace gate's verdict is its report, read whole: a RESULT_JSON line after megabytes of
log is still found (the log follower reads to the end of the file, not 1 MiB per poll), and a
report that lists failures or counts fewer passes than workloads fails without `all_pass`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, _LineFollower, run_gate_command

FAILED = {"total": 3, "passed": 1, "failures": ["c41d6e9a=INCORRECT_NUMERICAL ({'n': 4096})"]}


def _gate(tmp_path: Path, body: str) -> BenchRequest:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gate.py").write_text(body)
    return BenchRequest(workspace=ws, gate_command=f"{sys.executable} gate.py", gate_timeout_s=60)


def test_a_report_after_megabytes_of_log_is_read(tmp_path: Path) -> None:
    report = dict(FAILED, all_pass=False)
    request = _gate(
        tmp_path,
        "import json, sys\n"
        "sys.stdout.write(('[test_kernel] trace: ' + 'x' * 80 + '\\n') * 60_000)\n"  # ~6 MB
        f"print('[test_kernel] RESULT_JSON=' + json.dumps({report!r}))\n",  # then exit 0
    )
    result = run_gate_command(request)
    assert result is not None and not result.passed and result.status == "gate_failed"
    assert result.gate is not None and result.gate.total == 3
    assert "failed 1 of 3 workloads" in result.error.message  # type: ignore[union-attr]


def test_follower_reads_to_the_end(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"y" * 100 + b"\n" + (b"x" * 1000 + b"\n") * 5000 + b"last")
    seen: list[str] = []
    follower = _LineFollower(log, seen.append)
    follower.poll()
    assert len(seen) == 5001
    follower.flush()
    assert seen[-1] == "last"


@pytest.mark.parametrize(
    "report",
    [
        FAILED,  # failures listed, no all_pass
        {"total": 3, "passed": 2},  # fewer passed than ran
        {"failures": ["d2=TIMEOUT"]},
    ],
)
def test_a_report_that_counts_failures_fails_without_all_pass(tmp_path: Path, report: dict) -> None:
    request = _gate(tmp_path, f"print('[test_kernel] RESULT_JSON=' + {json.dumps(report)!r})\n")
    result = run_gate_command(request)
    assert result is not None and not result.passed and result.status == "gate_failed", result


def test_a_report_that_says_everything_passed_passes(tmp_path: Path) -> None:
    request = _gate(tmp_path, "print('[test_kernel] RESULT_JSON=' + '{\"total\": 3, \"passed\": 3}')\n")
    result = run_gate_command(request)
    assert result is not None and result.passed


MEAN_OBJECTIVE_REPORT = {  # an atrex v0.3.0 evaluator's RESULT_JSON (Atrex-Bench test_kernel)
    "total": 2,
    "passed": 2,
    "all_pass": True,
    "failures": [],
    "latency_us_by_shape": {"s1": 1.0, "s2": 6.0},
    "latency_us_geomean": 6.0**0.5,
    "performance_objective": "shape_speedup_arithmetic_mean",
    "performance_score": 3.8,
    "speedup_vs_ref_mean": 3.8,
    "speedup_vs_ref_geomean": None,
}


def test_a_gate_that_scores_by_an_objective_is_scored_by_it(tmp_path: Path) -> None:
    """Before: the report knew no performance_score, so a v0.3 gate's result had no score (its
    geomean is null) and its message no speedup."""
    body = f"print('[test_kernel] RESULT_JSON=' + {json.dumps(json.dumps(MEAN_OBJECTIVE_REPORT))})\n"
    result = run_gate_command(_gate(tmp_path, body))
    assert result is not None and result.passed and result.gate is not None
    gate = result.gate
    assert (gate.performance_objective, gate.performance_score, gate.speedup_vs_ref_mean) == (
        "shape_speedup_arithmetic_mean",
        3.8,
        3.8,
    )
    assert gate.extra == {} and result.score == 3.8 and result.baseline == "reference"
    assert any("3.800x vs its reference (mean over shapes)" in m for m in result.messages), result.messages


def test_an_iteration_records_the_gate_objective_as_atrex_does(tmp_path: Path) -> None:
    """kernelscope iterate in a workspace whose gate is a v0.3 evaluator writes the objective
    and its score into the record, so its versions and atrex's are scored alike."""
    from kernelscope.daemon.engine.memory import atrex_fields
    from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration

    request = _gate(
        tmp_path, f"print('[test_kernel] RESULT_JSON=' + {json.dumps(json.dumps(MEAN_OBJECTIVE_REPORT))})\n"
    )
    ws = request.workspace
    (ws / "kernel.py").write_text("def run():\n    pass\n")
    block = json.dumps({"bench": {"gate_command": request.gate_command}})
    (ws / "README.md").write_text(f"# ws\n\n```kernelscope\n{block}\n```\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    options = IterateOptions(action_category="baseline", db_url=str(tmp_path / "exp.sqlite"))
    result = run_iteration(ws, options)
    assert result.passed, result
    performance = json.loads((ws / "memory" / "v0.json").read_text())["performance"]
    assert performance["performance_objective"] == "shape_speedup_arithmetic_mean"
    assert performance["performance_score"] == 3.8 and performance["speedup_vs_ref_geomean"] is None
    assert atrex_fields.objective_score(performance) == ("shape_speedup_arithmetic_mean", 3.8)
