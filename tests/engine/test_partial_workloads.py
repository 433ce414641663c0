"""Records SOL-ExecBench's gate writes for a version that failed some workloads: its
test_kernel.py (`_summarize`, atrex 16f7ec4 reference/test_kernel.py L119-164) takes the
geomean latency and speedup over the workloads that PASSED only, and 0.0 for both when none
did; `_record_memory` stores them as `latency_us`, `speedup_vs_ref_geomean` and the passed
workloads' `latency_us_by_shape`. Such a figure is no score against v0's over every workload."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.memory.scores import parent_effect
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import write_record

UUIDS = ("uuid1", "uuid2", "uuid3")


def sol_record(by_shape: dict[str, float], all_pass: bool, speedup: float) -> dict[str, Any]:
    """A record as upstream's `_record_memory(_summarize(traces))` writes it."""
    latencies = list(by_shape.values())
    geomean = 0.0
    if latencies:
        product = 1.0
        for value in latencies:
            product *= value
        geomean = product ** (1 / len(latencies))
    return {
        "masked": False,
        "performance": {
            "latency_us": geomean,
            "latency_us_geomean": geomean,
            "latency_us_by_shape": by_shape,
            "speedup_vs_ref_geomean": speedup,
        },
        "correctness": {"status": "PASS" if all_pass else "FAIL", "max_abs_err": 5.0, "max_rel_err": 3.0},
        "quality_gate": {"result": "PASS" if all_pass else "FAIL", "failure_reason": None},
    }


@pytest.fixture
def sol_memory(tmp_path: Path) -> Path:
    """v0 and v1 pass every workload; v2 passed none (0.0 written); v3 passed 1 of 3, fast."""
    write_record(tmp_path, 0, **sol_record(dict(zip(UUIDS, (30.0, 60.0, 120.0), strict=True)), True, 1.0))
    write_record(tmp_path, 1, **sol_record(dict(zip(UUIDS, (10.0, 20.0, 40.0), strict=True)), True, 3.0))
    write_record(tmp_path, 2, **sol_record({}, False, 0.0))
    write_record(tmp_path, 3, **sol_record({"uuid1": 5.0}, False, 6.0))
    return tmp_path


def test_a_figure_over_part_of_the_workloads_is_no_score_and_says_so(sol_memory: Path) -> None:
    """Before: v3 showed `latency ratio 12.00x` (v0's 3-workload geomean over its 1-workload
    one) and `6.00x (geomean)` vs the reference; v2 a latency of 0.000 and `0.00x`."""
    ws = Workspace(sol_memory)
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v1"].score is not None and rows["v1"].score.value == pytest.approx(3.0)
    assert rows["v1"].coverage is None and rows["v1"].reference_aggregate == "geomean"
    assert rows["v2"].latency_us is None and rows["v2"].speedup_vs_reference is None
    assert rows["v2"].score is None and rows["v2"].coverage == "0 of 3 workloads"
    assert rows["v3"].score is None and rows["v3"].latency_ratio is not None  # (a recorded ratio)
    assert rows["v3"].coverage == "1 of 3 workloads"
    assert rows["v3"].reference_aggregate == "geomean over 1 of 3 workloads"
    entries = ws.memory.scan()
    assert ws.memory.best_version(entries, None)[0] == "v1"
    v1, v3 = (next(e.record for e in entries if e.version == v) for v in ("v1", "v3"))
    assert v1 is not None and v3 is not None
    assert parent_effect(v3, v1, "v1") is None  # was `latency ratio 4.00x vs v1`


def test_the_memory_list_table_says_which_workloads(sol_memory: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Both CLI paths (the fast one and typer's) print the same cells."""
    monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
    for full_cli in (False, True):
        if full_cli:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        result = cli("memory", "list", "-w", str(sol_memory))
        assert result.exit_code == 0, result.stderr
        lines = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│ v" in line}
        assert "5.000 (1 of 3 workloads)" in lines["v3"] and "latency ratio" not in lines["v3"]
        assert "- (0 of 3 workloads)" in lines["v2"] and "0.000" not in lines["v2"]


def test_a_passing_version_keeps_its_score_whatever_its_workloads_are_named(tmp_path: Path) -> None:
    """A version that passed ran every workload it was given: names written by another tool
    (atrex keys a workload by its uuid, kernelscope's iterate by its configuration's name) or a
    workload set trimmed since v0 is no partial run. Before (7844252's rule), v2 and v3 had no
    score, v1 was best, and mask-half could mask v3, the real best."""
    write_record(tmp_path, 0, **sol_record(dict(zip(UUIDS, (30.0, 60.0, 120.0), strict=True)), True, 1.0))
    write_record(tmp_path, 1, **sol_record(dict(zip(UUIDS, (15.0, 30.0, 60.0), strict=True)), True, 2.0))
    renamed = {f"{uuid} batch_size=7": us for uuid, us in zip(UUIDS, (6.0, 12.0, 24.0), strict=True)}
    write_record(tmp_path, 2, **sol_record(renamed, True, 5.0))
    write_record(tmp_path, 3, **sol_record({"uuid1": 3.0, "uuid2": 6.0}, True, 10.0))  # trimmed
    ws = Workspace(tmp_path)
    rows = {row.version: row for row in ws.memory.summaries()}
    for version in ("v2", "v3"):
        assert rows[version].score is not None and rows[version].coverage is None, rows[version]
    entries = ws.memory.scan()
    assert ws.memory.best_version(entries, None)[0] == "v3"


def test_a_failed_version_naming_no_workload_v0_names_is_not_called_partial(tmp_path: Path) -> None:
    """Unknown, not `0 of 3`: its names are another tool's."""
    write_record(tmp_path, 0, **sol_record(dict(zip(UUIDS, (30.0, 60.0, 120.0), strict=True)), True, 1.0))
    write_record(tmp_path, 1, **sol_record({"line1": 10.0, "line2": 20.0}, False, 3.0))
    rows = {row.version: row for row in Workspace(tmp_path).memory.summaries()}
    assert rows["v1"].coverage is None


def test_compare_says_which_workloads_a_partial_latency_is_over(sol_memory: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Before: `| latency (us) | 60 | 5 |`, v3's geomean over 1 workload beside v0's over 3."""
    (sol_memory / "kernel.py").write_text("def run(x, out):\n    out.copy_(x)\n")
    result = cli("compare", "v0", "v3", "-w", str(sol_memory))
    assert result.exit_code == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("| latency (us"))
    assert row == "| latency (us, geomean) | 60 | 5 (1 of 3 workloads) |", row
    found = cli("compare", "v0", "v3", "-w", str(sol_memory), "--json").json()
    assert found["b"]["latency_coverage"] == "1 of 3 workloads" and found["a"]["latency_coverage"] is None


def test_a_version_with_more_workloads_than_v0_is_scored_over_v0s(tmp_path: Path) -> None:
    """workload.jsonl grown since v0: v1 ran v0's three workloads 2x faster and a fourth, tiny
    one. Before: `latency ratio 4.68x` (v0's 3-workload geomean over v1's 4-workload one, the
    tiny workload counted as a gain); now 2.00x over v0's workloads, and the table says so."""
    write_record(tmp_path, 0, **sol_record(dict(zip(UUIDS, (30.0, 60.0, 120.0), strict=True)), True, 1.0))
    grown = {**dict(zip(UUIDS, (15.0, 30.0, 60.0), strict=True)), "uuid4": 1.0}
    write_record(tmp_path, 1, **sol_record(grown, True, 2.0))
    write_record(tmp_path, 2, **sol_record({**grown, "uuid1": 10.0}, True, 2.2))
    ws = Workspace(tmp_path)
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v1"].score is not None and rows["v1"].score.value == pytest.approx(2.0), rows["v1"]
    assert rows["v1"].score.source == "performance.latency_us_by_shape", rows["v1"]
    assert rows["v1"].coverage == "scored over v0's 3 of its 4 workloads", rows["v1"]
    entries = ws.memory.scan()
    v1, v2 = (next(e.record for e in entries if e.version == v) for v in ("v1", "v2"))
    assert v1 is not None and v2 is not None
    effect = parent_effect(v2, v1, "v1")  # (both ran the same four: their recorded latencies)
    assert effect is not None and effect.source == "performance.latency_us", effect


def test_grown_workloads_keep_the_recorded_ratio_where_latency_is_no_geomean(tmp_path: Path) -> None:
    """kernelscope's own records keep the slowest configuration's latency (iterate's headline),
    not a geomean: a version with a configuration more is scored as its siblings are, by the
    recorded latencies, not by a geomean of per-configuration ratios beside their ratios."""
    slowest = {"n=1024": 10.0, "n=4096": 40.0}
    record = sol_record(slowest, True, 1.0)
    record["performance"]["latency_us"] = 40.0
    write_record(tmp_path, 0, **record)
    grown = sol_record({"n=1024": 5.0, "n=4096": 40.0, "n=16384": 80.0}, True, 1.0)
    grown["performance"]["latency_us"] = 80.0
    write_record(tmp_path, 1, **grown)
    rows = {row.version: row for row in Workspace(tmp_path).memory.summaries()}
    assert rows["v1"].score is not None and rows["v1"].score.value == pytest.approx(0.5), rows["v1"]
    assert rows["v1"].score.source == "performance.latency_us", rows["v1"]
    assert rows["v1"].coverage is None, rows["v1"]


def _grown_case(tmp_path: Path, name: str, **performance: Any) -> Path:
    """v0 over three workloads; v1 over them (2x faster) and a fourth, with `performance` on top."""
    ws = tmp_path / name
    write_record(ws, 0, **sol_record(dict(zip(UUIDS, (30.0, 60.0, 120.0), strict=True)), True, 1.0))
    record = sol_record({**dict(zip(UUIDS, (15.0, 30.0, 60.0), strict=True)), "uuid4": 1.0}, True, 2.0)
    record["performance"].update(performance)
    for key in [k for k, v in performance.items() if v is None]:
        del record["performance"][key]
    write_record(ws, 1, **record)
    return ws


def test_the_grown_note_is_said_only_of_a_score_taken_over_v0s_workloads(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The note is the score's own (its source, performance.latency_us_by_shape), not a second
    reading of the workload sets. Before: "scored over v0's 3 of its 4 workloads" beside a
    version with no latency (no score), a carried-forward one, one whose ratio overflows (no
    score), and ones scored by atrex v0.3's objective or kernelscope's in-run speedup."""
    cases = {
        "no_latency": _grown_case(tmp_path, "a", latency_us=None),
        "carried": _grown_case(tmp_path, "l", carried_from_version="v0"),
        "objective": _grown_case(tmp_path, "j"),
        "in_run": _grown_case(tmp_path, "k"),
        "overflow": tmp_path / "e",
    }
    for number, score in ((0, 1.0), (1, 1.5)):  # (both carry atrex v0.3's objective: it decides)
        path = cases["objective"] / "memory" / f"v{number}.json"
        data = json.loads(path.read_text())
        data["performance"].update(
            performance_objective="shape_speedup_arithmetic_mean", performance_score=score
        )
        path.write_text(json.dumps(data))
    path = cases["in_run"] / "memory" / "v1.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "kernelscope": {"score_vs_v0": 1.7}}))
    huge, tiny = (
        sol_record(by_shape, True, 1.0) for by_shape in ({"uuid1": 1e300}, {"uuid1": 1e-300, "uuid3": 5.0})
    )
    huge["performance"].update(latency_us=1e300, latency_us_geomean=1e300)  # (a ratio past a float)
    tiny["performance"].update(latency_us=math.sqrt(5e-300), latency_us_geomean=math.sqrt(5e-300))
    write_record(cases["overflow"], 0, **huge)
    write_record(cases["overflow"], 1, **tiny)
    noted = {
        name: row.coverage
        for name, ws in cases.items()
        for row in Workspace(ws).memory.summaries()
        if row.version == "v1" and row.coverage is not None
    }
    assert noted == {}, noted
    ws = cases["no_latency"]
    (ws / "kernel.py").write_text("def run(x, out):\n    out.copy_(x)\n")
    found = cli("compare", "v0", "v1", "-w", str(ws), "--json").json()
    assert found["b"]["latency_coverage"] is None, found["b"]
    scored = _grown_case(tmp_path, "scored")  # (the note stays where the score is v0's workloads')
    assert {row.version: row for row in Workspace(scored).memory.summaries()}["v1"].coverage == (
        "scored over v0's 3 of its 4 workloads"
    )


@pytest.mark.parametrize("marker", ["rounded", "sol"])
def test_v0s_latency_rounded_or_marked_by_sol_is_its_geomean(tmp_path: Path, marker: str) -> None:
    """v0's latency_us rounded as an agent writes it (2.2 for a geomean of 2.2146), or SOL's own
    marker (latency_us_geomean written equal to latency_us, by_shape rounded further): the grown
    version is scored over v0's workloads. Before: 6.58x (rounded) and 4.68x (SOL), the tiny
    fourth workload counted as a gain."""
    latencies = (1.2345, 2.3456, 3.4567) if marker == "rounded" else (30.0, 60.0, 120.0)
    record = sol_record(dict(zip(UUIDS, latencies, strict=True)), True, 1.0)
    if marker == "rounded":
        record["performance"]["latency_us"] = 2.2  # (geomean 2.2146)
    else:
        record["performance"]["latency_us"] = record["performance"]["latency_us_geomean"] = 61.0
    write_record(tmp_path, 0, **record)
    halved = {uuid: us / 2 for uuid, us in zip(UUIDS, latencies, strict=True)}
    write_record(tmp_path, 1, **sol_record({**halved, "uuid4": latencies[0] / 100}, True, 2.0))
    row = {row.version: row for row in Workspace(tmp_path).memory.summaries()}["v1"]
    assert row.score is not None and row.score.value == pytest.approx(2.0), row
    assert row.coverage == "scored over v0's 3 of its 4 workloads", row
