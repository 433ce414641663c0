"""One number per fact: `kernelscope demo`'s table and its lenses show the same score for a
version (the in-run geometric-mean speedup vs v0), and no column calls a latency ratio a
speedup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.daemon.engine.workflows.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo_table_and_lenses_show_the_same_score(tmp_path: Path) -> None:
    result = run_demo(tmp_path / "demo", None, mode="interpreter")
    columns, rows = result.table_columns, result.table_rows
    assert columns[3] == "speedup vs v0 (in-run geomean)" and "latency (us, largest config)" in columns
    assert not any(c in ("vs v0", "speedup") for c in columns)
    scores = {row[0]: row[3] for row in rows}
    for iteration in result.iterations:
        record = json.loads((result.workspace / "memory" / f"{iteration.version}.json").read_text())
        assert iteration.score == record["kernelscope"]["score_vs_v0"]
        assert scores[iteration.version].startswith(f"{iteration.score:.2f}x")
    best = max(result.iterations, key=lambda i: i.score or 0.0)
    lens = result.kernel_lenses["add_kernel"]
    assert lens.startswith(f"best {best.score:.2f}x {best.version} |")
    assert scores["v0"] == "1.00x"  # v0's run interval is against the reference: not shown as its own


def test_memory_tables_name_what_their_number_is(vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`memory list` and `memory summary` show the one score, formatted by one rule: records
    without an in-run speedup are scored by the ratio of recorded latencies, named as such."""
    for command in ("list", "summary"):
        shown = cli("memory", command, "-w", str(vector_add_ws))
        assert shown.exit_code == 0 and "score vs v0" in shown.stdout, shown.stdout
        assert "latency ratio 1.22x" in shown.stdout and "speedup" not in shown.stdout  # v4: 61.0 / 49.8 us
    data = cli("memory", "summary", "-w", str(vector_add_ws), "--json").json()
    v4 = next(v for v in data["versions"] if v["version"] == "v4")
    assert v4["score"]["kind"] == "latency_ratio" and round(v4["score"]["value"], 3) == round(61.0 / 49.8, 3)
