"""A workspace gate's verdict is its report, read whole: a RESULT_JSON line after megabytes of
log is still found (the log follower reads to the end of the file, not 1 MiB per poll), and a
report that lists failures or counts fewer passes than workloads fails without `all_pass`."""

from __future__ import annotations

import json
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
