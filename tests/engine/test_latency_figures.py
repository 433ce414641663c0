"""Records from before and after iterate wrote the geomean latency in SOL-ExecBench and
Atrex-Bench workspaces state unlike figures as `latency_us`: v0's slowest workload's (20 us)
beside v1's geomean (4.68 us). Iterate's latency delta, `memory list`'s latency ratio and
compare's latency row took them as one figure (a ratio of 4.27 where the kernel is 1.25x)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from kernelscope.daemon.engine.history.service import HistoryService
from kernelscope.daemon.engine.memory.core import summary_row
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.workflows.iterate import Iteration
from kernelscope.protocol.bench import BenchResult, ConfigResult

SHAPES = {"a": 20.0, "b": 2.0, "c": 5.0}  # v0's geomean over them: 200 ** (1/3) = 5.848


def record(version: str, by_shape: dict[str, float], geomean: bool) -> dict[str, object]:
    latencies = list(by_shape.values())
    product = latencies[0] * latencies[1] * latencies[2]
    perf: dict[str, object] = {"latency_us_by_shape": by_shape, "measurement_subject": "candidate"}
    if geomean:
        perf["latency_us"] = perf["latency_us_geomean"] = round(product ** (1 / 3), 4)
    else:
        perf["latency_us"] = max(latencies)  # iterate's slowest configuration, before the geomean
    return {
        "version": version,
        "performance": perf,
        "quality_gate": {"result": "PASS"},
        "kernelscope": {"mode": "gpu"},
    }


def workspace(root: Path, *records: dict[str, object]) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "README.md").write_text("# t\n\n## Stop Conditions\n- latency <= 1 us\n")
    (root / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    for item in records:
        (root / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    return root


def test_the_latency_ratio_vs_v0_is_taken_over_one_figure(tmp_path: Path) -> None:
    v0 = record("v0", SHAPES, geomean=False)
    v1 = record("v1", {k: v * 0.8 for k, v in SHAPES.items()}, geomean=True)
    row = summary_row(1, tmp_path / "v1.json", v1, None, v0)
    assert abs(row["latency_ratio"] - 1.25) < 1e-3, row  # was 20 / 4.68 = 4.27
    elsewhere = record("v2", {"x": 3.0, "y": 4.0, "z": 5.0}, geomean=True)  # no workload shared
    row = summary_row(2, tmp_path / "v2.json", elsewhere, None, v0)
    assert row["latency_ratio"] is None, row
    assert row["latency_ratio_note"].startswith("unlike latency figures (v0's slowest, v2's geomean)"), row
    same = summary_row(3, tmp_path / "v3.json", record("v3", SHAPES, geomean=False), None, v0)
    assert same["latency_ratio"] == 1.0 and same["latency_ratio_note"] is None, same


def test_iterate_deltas_a_geomean_against_a_slowest_parent_over_one_figure(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", record("v0", SHAPES, geomean=False))
    parent = next(e for e in MemoryManager(ws).scan() if e.version == "v0")
    configs = [
        ConfigResult(name=name, passed=True, candidate_ms=us * 0.8 / 1000.0, baseline_ms=us / 1000.0)
        for name, us in SHAPES.items()
    ]
    bench = BenchResult(
        status="ok", passed=True, mode="gpu", workspace=str(ws), candidate="kernel.py", baseline="v0",
        entry_point="kernel_fn", configs=configs, score=1.25, score_vs_parent=1.25,
    )  # fmt: skip
    stub = SimpleNamespace(
        _action=lambda v: ("x", "y"), options=SimpleNamespace(expected_impact=None), store_url="sqlite:///x"
    )
    made = Iteration._memory_record(stub, "v1", bench, parent, [], "v0", True)  # type: ignore[arg-type]
    deltas = made["performance"]["comparison_with_previous"]
    # 4.679 (v1's geomean) - 5.848 (v0's over the same workloads); was 4.679 - 20 = -15.3
    assert abs(deltas["latency_delta"] - (4.6785 - 5.848)) < 1e-2, deltas
    assert deltas["latency_delta_figure"] == "geomean over 3 shared workloads", deltas


def test_compare_names_the_figure_of_its_latency_row(tmp_path: Path) -> None:
    v0 = record("v0", SHAPES, geomean=False)
    v1 = record("v1", {k: v * 0.8 for k, v in SHAPES.items()}, geomean=True)
    ws = workspace(
        tmp_path / "ws", v0, v1, record("v2", {k: v * 0.5 for k, v in SHAPES.items()}, geomean=True)
    )
    service = HistoryService(ws, db_url=str(tmp_path / "e.sqlite"))
    markdown = service.compare("v0", "v1").markdown
    assert "| latency (us, geomean over 3 shared workloads) | 5.85 | 4.68 |" in markdown, markdown
    assert "| score (vs v0) | latency ratio 1.00x vs v0 | latency ratio 1.25x vs v0 |" in markdown, markdown
    markdown = service.compare("v1", "v2").markdown
    assert "| latency (us, geomean) | 4.68 | 2.92 |" in markdown, markdown
