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
from kernelscope.daemon.engine.memory.scores import memory_scores
from kernelscope.daemon.engine.views.lens_text import file_lens, kernel_lens
from kernelscope.daemon.engine.workflows.probe import best_passing
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


def test_the_score_vs_v0_is_the_ratio_of_atrex_scores_and_best_is_atrex_promoted_version(v03: Path) -> None:
    """Before: the score was v0's geomean latency over the version's, and every best (the
    kernel lens, the goal line, mask-half's keep, the probe's baseline) named v1."""
    ws = Workspace(v03)
    entries, readme = ws.memory.scan(), ws.readme()
    v0, v1, v2 = (_perf(v03, v)["performance_score"] for v in ("v0", "v1", "v2"))
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v2"].score is not None and rows["v2"].score.source == "performance.performance_score"
    assert rows["v2"].score.value == pytest.approx(v2 / v0)
    scores = {s.version: s.score for s in memory_scores(entries, readme)}
    assert scores["v1"] == pytest.approx(v1 / v0) and scores["v2"] == pytest.approx(v2 / v0)
    assert kernel_lens(None, memory_scores(entries, readme)).startswith(f"best {v2 / v0:.2f}x v2 |")
    figure = f"{v2:.2f}x vs reference (mean over shapes)"
    assert f"| best {_perf(v03, 'v2')['latency_us']:.4g} us v2, {figure} |" in file_lens(ws)
    assert ws.memory.best_version(entries, None)[0] == "v2"
    best = best_passing(entries, readme)
    assert best is not None and best.version == "v2"


def test_an_upgraded_workspace_ranks_by_latency_across_objectives(v03: Path) -> None:
    """v0 recorded by atrex v0.2 (no objective), later versions by v0.3: the scores of two
    objectives are not compared (atrex's own dashboard does not join them), so the score vs
    v0 is the latency ratio, as for v0.2 records, and says so; each record still shows its
    own speedup over the reference, named by its aggregate."""
    path = v03 / "memory" / "v0.json"
    record = json.loads(path.read_text())
    performance = record["performance"]
    for key in ("performance_objective", "performance_score", "speedup_vs_ref_mean"):
        performance.pop(key)
    performance["speedup_vs_ref_geomean"] = 1.0053
    path.write_text(json.dumps(record, indent=2))
    ws = Workspace(v03)
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v2"].score is not None and rows["v2"].score.kind == "latency_ratio"
    assert rows["v2"].score.source == "performance.latency_us"
    assert (rows["v0"].reference_aggregate, rows["v2"].reference_aggregate) == ("geomean", "mean over shapes")
    entries = ws.memory.scan()
    assert ws.memory.best_version(entries, None)[0] == "v1"  # the lowest latency, as the docs say


@pytest.mark.parametrize("bad_score", [0, -1.5, None])
def test_a_record_of_the_objective_without_its_score_is_not_ranked_by_latency(
    v03: Path, bad_score: float | None
) -> None:
    """A passing v0.3 record that names the objective but whose `performance_score` is 0,
    negative or null (atrex writes the evaluator's value as it comes: session_io.py
    `_record_local_test_result`), and which ran fast: atrex's supervisor takes only a positive
    finite score as a measurement (campaign.py `_positive_finite`), so it has no score of the
    objective. Before, its score vs v0 fell back to the latency ratio (4.90x), ranked against
    the other versions' objective ratios: it was named best over v2, which atrex promoted."""
    record = json.loads((v03 / "memory" / "v2.json").read_text())
    record["version"] = "v4"
    performance = record["performance"]
    performance["performance_score"] = bad_score
    performance["latency_us"] = performance["latency_us_geomean"] = _perf(v03, "v0")["latency_us"] / 4.9
    (v03 / "memory" / "v4.json").write_text(json.dumps(record, indent=2))
    ws = Workspace(v03)
    entries, readme = ws.memory.scan(), ws.readme()
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v4"].score is None, rows["v4"].score  # no score of the objective's kind
    scores = {s.version: s.score for s in memory_scores(entries, readme)}
    assert scores["v4"] is None
    assert ws.memory.best_version(entries, None)[0] == "v2"
    assert kernel_lens(None, memory_scores(entries, readme)).startswith("best 3.79x v2 |")
    best = best_passing(entries, readme)
    assert best is not None and best.version == "v2"


def test_an_objective_ratio_that_overflows_is_no_score_not_a_latency_ratio(v03: Path) -> None:
    """v0's `performance_score` tiny (1e-300), a later record's huge (1e10): their ratio
    overflows a float, and the record, which names the objective v0 is scored by, fell through
    to the next rule and was scored by its latency (4.90x, kind latency_ratio), ranked against
    the other versions' objective ratios. It has no score, as a 0, negative or null
    `performance_score` has none (atrex_fields.objective_unscored), by every reader."""
    path = v03 / "memory" / "v0.json"
    record = json.loads(path.read_text())
    record["performance"]["performance_score"] = 1e-300
    path.write_text(json.dumps(record, indent=2))
    record = json.loads((v03 / "memory" / "v2.json").read_text())
    record["version"] = "v4"
    performance = record["performance"]
    performance["performance_score"] = 1e10
    performance["latency_us"] = performance["latency_us_geomean"] = _perf(v03, "v0")["latency_us"] / 4.9
    (v03 / "memory" / "v4.json").write_text(json.dumps(record, indent=2))
    ws = Workspace(v03)
    entries, readme = ws.memory.scan(), ws.readme()
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v4"].score is None, rows["v4"].score
    assert rows["v2"].score is not None and rows["v2"].score.kind == "metric_ratio"  # (3.79e300: finite)
    assert {s.version: s.score for s in memory_scores(entries, readme)}["v4"] is None
    assert ws.memory.best_version(entries, None)[0] == "v2"


def test_an_episode_trial_is_scored_as_the_versions_are(v03: Path) -> None:
    """A checkpoint evaluated on episode 2's branch (evaluations.jsonl, a v0.3 RESULT_JSON):
    before, its score was a latency ratio beside the versions' objective scores."""
    (hint,) = HistoryService(v03, db_url=str(v03.parent / "exp.sqlite")).tried()
    runs = (v03 / ".atrex_long_horizon/episodes/e0002/episode_runtime/evaluations.jsonl").read_text()
    checkpoint = json.loads(runs.splitlines()[0])["result"]["performance_score"]
    v0 = _perf(v03, "v0")["performance_score"]
    assert f"8 {checkpoint / v0:.2f}x v2 checkpoint" in hint.hint and "latency ratio" not in hint.hint, (
        hint.hint
    )


def test_atrex_v03_verified_improvement_is_a_score_gain_not_a_latency_change(v03: Path) -> None:
    """`authoritative_improvement_pct` is candidate score / incumbent score - 1 in v0.3: blame
    called it `latency -28.9% vs v1` for a v2 whose latency is 5% higher than v1's."""
    v1, v2 = _perf(v03, "v1"), _perf(v03, "v2")
    lines = HistoryService(v03, db_url=str(v03.parent / "exp.sqlite")).blame()
    hint = next(line.hint for line in lines if line.version == "v2")
    gain = 1 + v2["authoritative_improvement_pct"] / 100
    assert gain == pytest.approx(v2["performance_score"] / v1["performance_score"], rel=0.01)
    assert f"metric ratio {gain:.2f}x vs v1 · " in hint and "latency -" not in hint, hint


def test_the_tried_values_hint_names_the_objective_ratio(v03: Path) -> None:
    """The tried-values hint named a latency ratio but wrote atrex v0.3's objective ratio as a
    bare "3.79x" (read as kernelscope's in-run speedup): it says which ratio, once."""
    service = HistoryService(v03, use_store=False)
    (hint,) = [h for h in service.tried((v03 / "kernel.py").read_text()) if h.label == "BLOCK_M"]
    assert hint.hint.startswith("tried (metric ratio vs v0): 4 3.79x v2"), hint.hint
