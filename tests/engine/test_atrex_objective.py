"""Records of atrex v0.3.0, which scores by a performance objective: every record carries
`performance.performance_objective` ("shape_speedup_arithmetic_mean") and its
`performance_score` (the arithmetic mean of the per-shape speedups over the reference), and
`speedup_vs_ref_geomean` is null (docs/releases/v0.3.0.md; tests/support/field_workspaces.py
`build_atrex_sol_workspace(objective=...)`).

The fixture's episode 2 wins on the mean speedup and loses on the geomean latency, so the two
orders disagree: atrex v0.3 promoted v2, and kernelscope's latency ratio had named v1 best.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.history.service import HistoryService
from kernelscope.daemon.engine.views.lens_text import file_lens
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.support.field_workspaces import MEAN_SPEEDUP_OBJECTIVE, WORKSPACE_NAME, build_atrex_sol_workspace


@pytest.fixture(scope="module")
def v03_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atrex-v03")
    return build_atrex_sol_workspace(root / WORKSPACE_NAME, objective=MEAN_SPEEDUP_OBJECTIVE)


@pytest.fixture
def v03(v03_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the v0.3 workspace (its git repository included)."""
    monkeypatch.setenv("KERNELSCOPE_HISTORY_CACHE", str(tmp_path / "history-cache"))
    ws = tmp_path / v03_template.name
    shutil.copytree(v03_template, ws, symlinks=True)
    return ws


def _perf(ws: Path, version: str) -> dict[str, Any]:
    performance: dict[str, Any] = json.loads((ws / "memory" / f"{version}.json").read_text())["performance"]
    return performance


def test_the_fixture_orders_disagree(v03: Path) -> None:
    v1, v2 = _perf(v03, "v1"), _perf(v03, "v2")
    assert v1["performance_objective"] == v2["performance_objective"] == MEAN_SPEEDUP_OBJECTIVE
    assert v1["speedup_vs_ref_geomean"] is None and v2["speedup_vs_ref_geomean"] is None
    assert v2["performance_score"] > v1["performance_score"]  # atrex v0.3 promoted v2 over v1
    assert v2["latency_us_geomean"] > v1["latency_us_geomean"]  # the geomean order says v1


# -- the speedup over the reference ------------------------------------------------------------


def test_the_reference_speedup_is_atrex_score_named_by_its_aggregate(v03: Path) -> None:
    """Before: `speedup_vs_reference` read only `speedup_vs_ref_geomean`, null in every v0.3
    record, so the figure vanished from `memory list`, the goal line and blame."""
    ws = Workspace(v03)
    v2 = _perf(v03, "v2")
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v2"].speedup_vs_reference == pytest.approx(v2["performance_score"])
    assert rows["v2"].reference_aggregate == "mean over shapes"
    assert rows["v3"].speedup_vs_reference is None  # the pivot's numbers are v2's, carried
    figure = f"{v2['performance_score']:.2f}x vs reference (mean over shapes)"
    assert "x vs reference (mean over shapes) |" in file_lens(ws)  # the goal line's best
    effect = HistoryService(v03, db_url=str(v03.parent / "exp.sqlite")).history().versions["v2"].effect
    assert figure in effect.text, effect.text


# -- the one score and the best ----------------------------------------------------------------
