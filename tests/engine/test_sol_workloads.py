"""workload.jsonl read by one rule (protocol.sol_workloads) in the harness and the daemon: the
profile's workload count, and the names a trace export gives workloads, are the harness's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.daemon.engine.store.traces import traces_from_bench
from kernelscope.daemon.engine.workspace.kinds import profile
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.kernels.adapters.sol_execbench import _read_workloads
from kernelscope.protocol.bench import BenchError, BenchResult
from kernelscope.protocol.sol_workloads import WorkloadsError, parse_workloads
from tests.support.sol_workspace import make_sol_workspace


def _compile_error(ws: Path) -> BenchResult:
    return BenchResult.model_validate(
        {
            "status": "error",
            "passed": False,
            "mode": "interpreter",
            "workspace": str(ws),
            "candidate": str(ws / "kernel.py"),
            "baseline": "reference",
            "entry_point": "run",
            "configs": [],
            "error": BenchError(kind="compile", message="SyntaxError"),
            "env": {"torch": "2.13.0+cpu", "triton": "3.9.0", "cuda": None, "gpu": None},
        }
    )


def test_a_run_that_failed_before_any_workload_names_each_as_the_harness_does(tmp_path: Path) -> None:
    """A line without a uuid after a blank line: the harness names it by its line number in the
    file (`line3`); the export, one trace per workload, named it by its place among the parsed
    lines (`line2`) before."""
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    first, second = [json.loads(line) for line in (ws / "workload.jsonl").read_text().splitlines()[:2]]
    del second["uuid"]
    (ws / "workload.jsonl").write_text(json.dumps(first) + "\n\n" + json.dumps(second) + "\n")
    harness = [w["uuid"] for w in _read_workloads(ws / "workload.jsonl")]
    assert harness == [first["uuid"], "line3"]
    traces = traces_from_bench(_compile_error(ws), ws)
    assert [t.workload.uuid for t in traces] == harness
    assert [t.workload.axes for t in traces] == [first["axes"], second["axes"]]


def test_a_workload_file_the_harness_refuses_has_no_count_and_says_why(tmp_path: Path) -> None:
    """The profile counted every non-blank line, so a file the harness refuses at load (line 2
    not JSON) read as 3 workloads."""
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    lines = (ws / "workload.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-1]  # the closing brace lost
    (ws / "workload.jsonl").write_text("\n".join(lines) + "\n")
    found = profile(ws, Workspace(ws).readme())
    assert found.workload_count is None
    assert found.workload_count_note is not None
    assert "workload.jsonl line 2 is not valid JSON" in found.workload_count_note


def test_a_readable_workload_file_is_counted_without_its_blank_lines(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "kernel_opt_rmsnorm")
    lines = (ws / "workload.jsonl").read_text().splitlines()
    (ws / "workload.jsonl").write_text("\n\n".join(lines) + "\n\n")
    found = profile(ws, Workspace(ws).readme())
    assert (found.workload_count, found.workload_count_note) == (len(lines), None)


def test_lines_end_at_newlines_only_and_a_uuid_is_a_non_empty_string() -> None:
    """A U+2028 inside a JSON string is part of its line (upstream reads the file line by line;
    str.splitlines cut it, and the file was refused); a `uuid` of null or "" is refused, as
    upstream's NonEmptyString is (it was named "None"); CRLF line ends read as LF."""
    named = json.dumps({"uuid": "a", "axes": {"n": 1}, "inputs": {"note": "x\u2028y"}}, ensure_ascii=False)
    assert [w["inputs"]["note"] for w in parse_workloads(named + "\r\n")] == ["x\u2028y"]
    for uuid in (None, "", 7):
        with pytest.raises(WorkloadsError, match="line 2 has a uuid that is not a non-empty string"):
            parse_workloads(named + "\n" + json.dumps({"uuid": uuid, "axes": {}}) + "\n")
