"""A utilization target judged by the one stop rule, as atrex's supervisor judges it.

atrex writes its `--target-util` into a native Atrex-Bench README's `## Campaign` as `Target
utilization stop condition: `90%`` (orchestrator/campaign.py) and stops when the larger of a
promoted record's `tflops_peak_utilization_pct` and `bandwidth_peak_utilization_pct` reaches it
(orchestrator/workspace_state.py `peak_util`). kernelscope read such a bullet, and `peak
utilization >= 90%`, as a stop condition in words: iterate recorded `stop_conditions_met: false`
of a version at 95% and the lens never said the target was met.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.memory.stop_rule import condition_status, readme_verdict
from kernelscope.daemon.engine.views.lens_text import file_lens, stop_condition_lines
from kernelscope.daemon.engine.views.stop_judgements import judge_stop_conditions
from kernelscope.daemon.engine.workflows import iterate as iterate_module
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.iterate import (
    IterateOptions,
    evaluate_stop_conditions,
    run_iteration,
)
from kernelscope.daemon.engine.workspace import readme_conditions
from kernelscope.daemon.engine.workspace.readme import parse_readme
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.bench import BenchResult, ConfigResult
from kernelscope.protocol.stats import NOT_GPU_FIGURES
from tests.conftest import EXAMPLES
from tests.support.atrex_bench_workspace import README as ATREX_BENCH_README

ATREX_README = ATREX_BENCH_README.format(mode="leaderboard")
ATREX_BULLET_LINE = ATREX_README.splitlines().index("- Target utilization stop condition: `90%`") + 1
MISSING = "no performance.tflops_peak_utilization_pct or bandwidth_peak_utilization_pct recorded"


def atrex_record(version: str, latency_us: float, tflops_pct: Any, bandwidth_pct: Any) -> dict[str, Any]:
    """A promoted version as atrex records it (tests/support/field_workspaces.py's shape): no
    kernelscope block, the two percentages null where it computed none."""
    return {
        "version": version,
        "masked": False,
        "performance": {
            "latency_us": latency_us,
            "latency_us_geomean": latency_us,
            "measurement_subject": "candidate",
            "carried_from_version": None,
            "tflops_peak_utilization_pct": tflops_pct,
            "bandwidth_peak_utilization_pct": bandwidth_pct,
        },
        "correctness": {"status": "PASS"},
        "quality_gate": {"result": "PASS", "failure_reason": None},
    }


def test_the_atrex_bench_bullet_is_a_utilization_target_not_words() -> None:
    readme = parse_readme(ATREX_README)
    (condition,) = readme.stop_conditions
    assert (condition.kind, condition.comparator, condition.normalized_value) == ("utilization", ">=", 90.0)
    assert condition.line == ATREX_BULLET_LINE and condition.target_text == ">= 90%", condition
    assert readme.stated_stop_conditions == [] and readme.unchecked_stop_conditions == []
    assert not [n for n in readme.notes if n.code == "readme:no-measurable-stop-condition"], readme.notes
    # (no measure of `best`: the one score decides, as for the goal alone)
    assert readme.primary_kind is None and readme_conditions.primary_kind(ATREX_README) is None


@pytest.mark.parametrize(
    ("tflops_pct", "bandwidth_pct", "measured", "met"),
    [
        (40.0, 92.5, 92.5, True),  # the larger of the two, as peak_util
        (91.0, None, 91.0, True),  # one alone
        (None, 50.0, 50.0, False),
        (89.99, "12.5", 89.99, False),
    ],
)
def test_an_atrex_record_is_judged_on_its_larger_utilization(
    tflops_pct: Any, bandwidth_pct: Any, measured: float, met: bool
) -> None:
    readme = parse_readme(ATREX_README)
    (status,), all_met = readme_verdict(readme, atrex_record("v1", 10.0, tflops_pct, bandwidth_pct))
    assert (status.kind, status.unit, status.measured, status.met) == ("utilization", "%", measured, met)
    assert all_met is met


def test_a_record_without_either_figure_is_not_evaluated_never_missed() -> None:
    readme = parse_readme(ATREX_README)
    (status,), all_met = readme_verdict(readme, atrex_record("v1", 10.0, None, None))
    assert (status.met, status.note) == (None, MISSING), status
    assert all_met is None
    interpreter = {**atrex_record("v1", 10.0, 95.0, 95.0), "kernelscope": {"mode": "interpreter"}}
    status = condition_status(readme.stop_conditions[0], interpreter)
    assert (status.met, status.note) == (None, NOT_GPU_FIGURES), status


def test_atrex_s_zero_percent_turns_the_check_off_and_stays_words() -> None:
    """atrex stops on utilization only where `target_util > 0` (long_horizon/campaign.py)."""
    readme = parse_readme(ATREX_README.replace("`90%`", "`0%`"))
    assert readme.stop_conditions == [] and readme.unchecked_stop_conditions == []
    assert readme.stated_stop_conditions == ["Target utilization stop condition: 0%"]


def stop_readme(bullet: str) -> str:
    return f"# K\n\n## Stop Conditions\n\n- {bullet}\n"


@pytest.mark.parametrize(
    "bullet",
    [
        "SM utilization >= 80%",
        "tensor core utilization >= 70%",
        "occupancy utilization >= 50%",
        "memory utilization >= 90%",
        "GPU utilization >= 95% (nvidia-smi)",
        "GPU utilization stop condition: 95%",
        "SM target utilization stop condition: 90%",
        "Tensor Core utilization >= 70%",
        "DRAM utilization >= 90%",
        "L2 utilization >= 90%",
        "warp utilization >= 90%",
        "compute utilization >= 90%",
    ],
)
def test_another_utilization_is_a_condition_in_words_not_the_peak(bullet: str) -> None:
    """Only the peak's utilization is the figure judged (docs/workspace.md): an SM's, an
    occupancy, nvidia-smi's are not what `peak_util` measures."""
    readme = parse_readme(stop_readme(bullet))
    assert readme.stop_conditions == [], readme.stop_conditions
    assert readme.stated_stop_conditions == [bullet] and readme.unchecked_stop_conditions == []


@pytest.mark.parametrize(
    "bullet",
    [
        "peak utilization >= 90%",
        "utilization >= 90%",
        "target utilization >= 90%",
        "speedup >= 2x, utilization >= 90%",
        # prose before it: the peak's unless the word right before names another utilization
        "Stop when utilization >= 90%",
        "Stop if utilization >= 90%",
        "Stop condition - utilization >= 90%",
        "the peak utilization >= 90%",
        "achieved peak utilization >= 90%",
        "hardware peak utilization >= 90%",
        "HBM peak utilization >= 90%",
        "reach peak utilization >= 90%",
        "overall utilization >= 90%",
        "kernel utilization >= 90%",
        "v2 peak utilization >= 90%",
    ],
)
def test_the_peak_utilization_is_read_by_its_names(bullet: str) -> None:
    (condition,) = parse_readme(stop_readme(bullet)).stop_conditions
    assert (condition.kind, condition.normalized_value) == ("utilization", 90.0)


@pytest.mark.parametrize(
    ("bullet", "unread"),
    [
        ("peak utilization >= 90% and latency <= 20 us", "peak utilization >= 90%"),
        ("latency <= 20 us and peak utilization >= 90%", "peak utilization >= 90%"),
        ("latency <= 20 us and the peak utilization >= 90%", "the peak utilization >= 90%"),
    ],
)
def test_a_utilization_beside_another_target_is_said_not_dropped(bullet: str, unread: str) -> None:
    """One bullet is one condition: the utilization not read is listed and warned, as a second
    measured target is."""
    readme = parse_readme(stop_readme(bullet))
    assert [c.kind for c in readme.stop_conditions] == ["latency"]
    assert readme.unchecked_stop_conditions == [unread]
    (note,) = [n for n in readme.notes if n.code == "readme:stop-condition-skipped"]
    assert f"'{unread}' is not read" in note.message, note


@pytest.mark.parametrize(
    "bullet",
    [
        "peak utilization >= 90% * 0.9",
        "peak utilization >= 90% - 5%",
        "Target utilization stop condition: `90%` * 0.9",
        "Target utilization stop condition: 90% - 5%",
    ],
)
def test_arithmetic_on_a_utilization_is_refused_never_read_as_its_first_figure(bullet: str) -> None:
    readme = parse_readme(stop_readme(bullet))
    assert readme.stop_conditions == [] and readme.unchecked_stop_conditions == [bullet.replace("`", "")]
    (note,) = [n for n in readme.notes if n.code == "readme:stop-condition-skipped"]
    assert "cannot compute" in note.message, note


def test_a_note_with_a_figure_after_a_utilization_is_a_note() -> None:
    readme = parse_readme(stop_readme("peak utilization >= 90% (of 4.8 TB/s peak)"))
    (condition,) = readme.stop_conditions
    assert (condition.kind, condition.normalized_value, condition.target_text) == (
        "utilization",
        90.0,
        ">= 90%",
    )
    assert readme.unchecked_stop_conditions == [] and readme.stated_stop_conditions == []
    assert not [n for n in readme.notes if n.code == "readme:stop-condition-skipped"], readme.notes


def lens_of(root: Path, readme: str, records: list[dict[str, Any]]) -> str:
    root.mkdir()
    (root / "README.md").write_text(readme)
    (root / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (root / "memory").mkdir()
    for item in records:
        (root / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    return file_lens(Workspace(root))


def test_the_lens_states_the_goal_and_the_utilization_target_met(tmp_path: Path) -> None:
    records = [atrex_record("v0", 20.0, None, None), atrex_record("v1", 10.0, 30.0, 92.5)]
    lens = lens_of(tmp_path / "ws", ATREX_README, records)
    parts = lens.split(" | ")
    assert parts[0].startswith("goal: Minimize the full-workload geomean latency"), lens
    assert parts[1] == "best 10 us v1", lens
    assert parts[2:4] == ["target utilization >= 90%", "best 92.5% v1, 103% of target (met)"], lens
    lines = stop_condition_lines(Workspace(tmp_path / "ws"))
    assert lines == ["utilization >= 90%: best 92.5% v1, 103% of target (met)"], lines


def test_the_lens_says_a_best_without_the_figures_records_none(tmp_path: Path) -> None:
    records = [atrex_record("v0", 20.0, None, None), atrex_record("v1", 10.0, None, None)]
    lens = lens_of(tmp_path / "ws", ATREX_README, records)
    assert f"target utilization >= 90% | best v1, {MISSING} | next v2" in lens, lens


@pytest.mark.parametrize("records", [[], [atrex_record("v0", 20.0, None, 45.0)]])
def test_a_readme_whose_only_condition_is_a_utilization(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    """No goal, no other target: the best version is the one score's (no primary metric), and
    the lens says where it stands."""
    readme = "# t\n\n## Stop Conditions\n- peak utilization >= 90%\n"
    lens = lens_of(tmp_path / "ws", readme, records)
    judged = judge_stop_conditions(Workspace(tmp_path / "ws"))
    if records:
        assert judged.best is not None and judged.best.version == "v0"
        assert lens.startswith("target utilization >= 90% | best 45% v0, 50% of target | next v1"), lens
    else:
        assert judged.best is None
        assert lens.startswith("target utilization >= 90% | no passing measurement yet | next v0"), lens


def test_the_best_version_is_chosen_by_the_first_measured_metric_not_the_utilization(tmp_path: Path) -> None:
    """A utilization first and a latency after: `best` is the lowest latency's (v0 at 10 us),
    not the highest utilization's (v1 at 95%)."""
    readme = "# t\n\n## Stop Conditions\n- peak utilization >= 90%\n- latency <= 12 us\n"
    assert parse_readme(readme).primary_kind == "latency" == readme_conditions.primary_kind(readme)
    records = [atrex_record("v0", 10.0, None, 60.0), atrex_record("v1", 20.0, None, 95.0)]
    lens = lens_of(tmp_path / "ws", readme, records)
    assert lens.startswith(
        "target utilization >= 90% | met by v1: 95%, 106% of target | best 60% v0, 67% of target"
        " | latency <= 12 us: 120% v0 (met) | next v2"
    ), lens


def gpu_run(fraction: float | None) -> BenchResult:
    config = ConfigResult(
        name="n=1048576", passed=True, candidate_ms=0.02, baseline_ms=0.04, gbps=4400.0,
        bandwidth_fraction=fraction, speedup=2.0,
    )  # fmt: skip
    return BenchResult(
        status="ok", passed=True, mode="gpu", workspace="/w", candidate="/w/kernel.py",
        baseline="reference", entry_point="kernel_fn", configs=[config], score=2.0,
    )  # fmt: skip


def test_iterate_records_the_utilization_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `stop_conditions_met: false` at 95% of the peak, the condition never judged."""
    readme = parse_readme(ATREX_README)
    (status,), met = evaluate_stop_conditions(readme, gpu_run(None))
    assert met is None and status.met is None and "no peak utilization" in (status.note or ""), status
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "vector_add" / "kernel.py", ws / "kernel.py")
    shutil.copy(EXAMPLES / "vector_add" / "reference.py", ws / "reference.py")
    (ws / "README.md").write_text(ATREX_README)
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "reference.py"], "init")
    monkeypatch.setattr(iterate_module, "run_benchmark", lambda request, cancel=None: gpu_run(0.95))
    options = IterateOptions(
        action_category="baseline", action_description="v0", db_url=str(tmp_path / "e.db")
    )
    result = run_iteration(ws, options)
    assert result.stop_conditions_met is True, result
    record = json.loads((ws / "memory" / "v0.json").read_text())
    (recorded,) = record["kernelscope"]["stop_conditions"]
    assert (recorded["kind"], recorded["measured"], recorded["met"]) == ("utilization", 95.0, True), recorded
    assert "target utilization >= 90% | best 95% v0, 106% of target (met)" in file_lens(Workspace(ws))
