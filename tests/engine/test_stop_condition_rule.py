"""One rule for when a README stop condition is met, the same in `kernelscope iterate` (which
records its answer) and in the file lens (which states it for every version, atrex's too).

A condition is judged on the figure the version's record states for the target's metric: the
version's one number over its workloads, which atrex's supervisor checks its target against
(the record's `performance`), never the best of the workloads. iterate judged each condition
on its best configuration (the lowest latency, the highest GB/s) while the record and the lens
read its slowest: the same version was `met` in iterate's answer and `50% of target` above
kernel.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.views.lens_text import file_lens, stop_condition_lines
from kernelscope.daemon.engine.workflows import iterate as iterate_module
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.iterate import (
    IterateOptions,
    evaluate_stop_conditions,
    run_iteration,
)
from kernelscope.daemon.engine.workspace.readme import parse_readme
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.bench import BenchResult, ConfigResult
from tests.conftest import EXAMPLES

TWO_TARGETS = "# t\n\n## Stop Conditions\n- latency <= 10 us\n- memory-bound target: bandwidth >= 4.32TB/s\n"


def two_workloads(mode: str = "gpu") -> BenchResult:
    """A small workload that meets `latency <= 10 us` (5 us) and the large one, the kernel's
    figure, that does not (20 us)."""
    small = ConfigResult(
        name="n=1024", passed=True, candidate_ms=0.005, baseline_ms=0.01, gbps=1.6, speedup=2.0
    )
    large = ConfigResult(
        name="n=1048576", passed=True, candidate_ms=0.020, baseline_ms=0.04, gbps=4400.0, speedup=2.0
    )
    return BenchResult(
        status="ok",
        passed=True,
        mode=mode,  # type: ignore[arg-type]
        workspace="/w",
        candidate="/w/kernel.py",
        baseline="reference",
        entry_point="kernel_fn",
        configs=[small, large],
        score=2.0,
    )


def test_iterate_judges_a_condition_on_the_figure_it_records_not_the_best_workload() -> None:
    """Before: `latency <= 10 us` met, measured 5 us (the small workload), where the record
    says 20 us."""
    (latency, bandwidth), met = evaluate_stop_conditions(parse_readme(TWO_TARGETS), two_workloads())
    assert (latency.measured, latency.met) == (20.0, False), latency
    assert (bandwidth.measured, bandwidth.met) == (4400.0, True), bandwidth
    assert met is False


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose v0 iterate recorded from `two_workloads` (a GPU run, faked)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "vector_add" / "kernel.py", ws / "kernel.py")
    shutil.copy(EXAMPLES / "vector_add" / "reference.py", ws / "reference.py")
    (ws / "README.md").write_text(TWO_TARGETS)
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "reference.py"], "init")
    monkeypatch.setattr(iterate_module, "run_benchmark", lambda request, cancel=None: two_workloads())
    result = run_iteration(
        ws,
        IterateOptions(
            action_category="baseline", action_description="v0", db_url=str(tmp_path / "e.sqlite")
        ),
    )
    assert result.passed and result.version == "v0"
    return ws


def test_iterate_and_the_lens_say_the_same_of_the_same_version(recorded: Path) -> None:
    record = json.loads((recorded / "memory" / "v0.json").read_text())
    statuses = record["kernelscope"]["stop_conditions"]
    assert [(s["measured"], s["met"]) for s in statuses] == [(20.0, False), (4400.0, True)], statuses
    assert record["performance"]["latency_us"] == 20.0  # (its slowest: not a geomean objective)
    assert "latency_us_geomean" not in record["performance"]
    lens = file_lens(Workspace(recorded))
    assert lens.startswith("target latency <= 10 us | best 20 us v0, 50% of target |"), lens
    assert "(met)" not in lens.split(" | ")[1], lens


def three_workloads() -> BenchResult:
    """A SOL-ExecBench gate run over 3 workloads: 2, 10 and 50 us, geomean 10 us."""
    configs = [
        ConfigResult(name=f"aaaa1111-{n}", passed=True, candidate_ms=us / 1000, baseline_ms=us / 500)
        for n, us in enumerate((2.0, 10.0, 50.0))
    ]
    return two_workloads().model_copy(update={"configs": configs})


def test_a_geomean_workspace_records_the_geomean_latency_as_atrex_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """atrex writes a SOL-ExecBench (or Atrex-Bench) version's `latency_us` as the geomean over
    its workloads (its README: minimize the GEOMEAN), with `latency_us_geomean` beside it;
    iterate wrote the slowest workload's. Before: the same run recorded 50 us and `latency <=
    12 us` not met by iterate, 10 us and met in atrex's record."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "vector_add" / "kernel.py", ws / "kernel.py")
    (ws / "definition.json").write_text("{}")
    (ws / "workload.jsonl").write_text("")
    (ws / "README.md").write_text("# t\n\n## Stop Conditions\n- latency <= 12 us\n")
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "definition.json", ws / "workload.jsonl"], "init")
    monkeypatch.setattr(iterate_module, "run_benchmark", lambda request, cancel=None: three_workloads())
    options = IterateOptions(
        action_category="baseline", action_description="v0", db_url=str(tmp_path / "e.db")
    )
    result = run_iteration(ws, options)
    performance = json.loads((ws / "memory" / "v0.json").read_text())["performance"]
    assert performance["latency_us"] == performance["latency_us_geomean"] == 10.0, performance
    assert result.latency_us == 10.0 and result.stop_conditions_met is True, result
    assert file_lens(Workspace(ws)).startswith(
        "target latency <= 12 us | best 10 us v0, 120% of target (met)"
    )


def gpu_record(
    version: str, latency_us: float, gbps: float | None, score: float | None = None
) -> dict[str, object]:
    block: dict[str, object] = {"mode": "gpu"}
    if score is not None:
        block["score_vs_v0"] = score
    return {
        "version": version,
        "performance": {"latency_us": latency_us, "bandwidth_gbps": gbps},
        "quality_gate": {"result": "PASS"},
        "kernelscope": block,
    }


def lens_of(root: Path, readme: str, records: list[dict[str, object]]) -> str:
    root.mkdir()
    (root / "README.md").write_text(readme)
    (root / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (root / "memory").mkdir()
    for item in records:
        (root / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    return file_lens(Workspace(root))


def test_the_lens_states_every_stop_condition_not_only_the_first(tmp_path: Path) -> None:
    """The lens read the README's first stop condition only: a README asking for 10 us and
    4.32 TB/s showed the latency alone, and nothing said the bandwidth target was met."""
    lens = lens_of(tmp_path / "ws", TWO_TARGETS, [gpu_record("v0", 20.0, 4400.0)])
    assert lens.startswith(
        "target latency <= 10 us | best 20 us v0, 50% of target | bandwidth >= 4.32TB/s: 102% v0 (met) | next v1"
    ), lens


def test_a_further_condition_a_gpu_version_met_is_not_hidden_by_an_interpreter_best(tmp_path: Path) -> None:
    """The best version (by score) ran under the interpreter: each condition still says which
    GPU version met it, and what the best GPU figure is where none did."""
    three = TWO_TARGETS + "- bf16 TFLOPS >= 100T\n"
    v1 = gpu_record("v1", 8.0, 4500.0, score=2.0)
    v1["performance"]["tflops"] = 50.0  # type: ignore[index]
    interpreted = {
        **gpu_record("v2", 900.0, None, score=3.0),
        "kernelscope": {"mode": "interpreter", "score_vs_v0": 3.0},
    }
    lens = lens_of(tmp_path / "ws", three, [gpu_record("v0", 16.0, 2000.0), v1, interpreted])
    parts = lens.split(" | ")
    assert parts[:3] == [
        "target latency <= 10 us",
        "met by v1: 8 us, 125% of target",
        "best v2: not evaluated (interpreter timings are not GPU figures)",
    ], lens
    assert parts[3] == "+2: 1 met, 1 at 50%", lens  # (more than one further condition: one part)
    lines = stop_condition_lines(Workspace(tmp_path / "ws"))
    assert lines[1:] == ["bandwidth >= 4.32TB/s: met by v1", "tflops >= 100T: best GPU figure 50% v1"], lines


def test_further_stop_conditions_make_one_short_part_and_are_told_in_full_on_hover(tmp_path: Path) -> None:
    """With 3 conditions the lens title reached 140-222 characters: a title an editor cuts off.
    Past the second condition they are one part; each in full in the lens's tooltip and the
    kernel's hover, a condition no version evaluated with its reason (before: none given)."""
    three = TWO_TARGETS + "- compute-bound target: bf16 TFLOPS >= 185.4T\n"
    records = [gpu_record("v0", 40.0, 2000.0, score=1.0), gpu_record("v1", 20.0, 4400.0, score=2.0)]
    lens = lens_of(tmp_path / "ws", three, records)
    assert (
        lens
        == "target latency <= 10 us | best 20 us v1, 50% of target | +2: 1 met, 1 not evaluated | next v2 | 0 masked"
    )
    assert stop_condition_lines(Workspace(tmp_path / "ws")) == [
        "latency <= 10 us: best 20 us v1, 50% of target",
        "bandwidth >= 4.32TB/s: 102% v1 (met)",
        "tflops >= 185.4T: not evaluated (no performance.tflops recorded)",
    ]
    from kernelscope.daemon.engine.views.history_table import history
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache

    markdown = history(WorkspaceCache(tmp_path / "ws", lambda: None), None).markdown
    assert "**Stop conditions**\n\n- latency <= 10 us: best 20 us v1, 50% of target\n" in markdown, markdown
    assert "- tflops >= 185.4T: not evaluated (no performance.tflops recorded)" in markdown, markdown


@pytest.mark.parametrize("value", [{"text": "bw", "kind": "bandwidth", "met": True}, "met", 3])
def test_compare_says_so_of_stop_conditions_recorded_as_no_list(tmp_path: Path, value: object) -> None:
    """compare said how many entries of the list it could not read, but a `stop_conditions`
    that is no list at all (a single entry, a word) was left out without a word."""
    from kernelscope.daemon.engine.history.service import HistoryService

    v1 = gpu_record("v1", 8.0, 4500.0, score=2.0)
    v1["kernelscope"]["stop_conditions"] = value  # type: ignore[index]
    lens_of(tmp_path / "ws", TWO_TARGETS, [gpu_record("v0", 16.0, 2000.0), v1])
    comparison = HistoryService(tmp_path / "ws", db_url=str(tmp_path / "e.sqlite")).compare("v0", "v1")
    details = comparison.gate_details["v1"]
    assert "stop conditions left out (recorded as no list of entries this kernelscope can read)" in details
    assert not any("left out" in line for line in comparison.gate_details["v0"])


def test_a_stop_condition_kernelscope_cannot_read_makes_iterate_answer_at_most_null() -> None:
    """Before: with `bandwidth >= 4,32TB/s` (a decimal comma) skipped, `latency <= 10 us` met
    made stop_conditions_met true: an agent following the seed would stop on a target never
    checked."""
    readme = parse_readme("# t\n\n## Stop Conditions\n- latency <= 30 us\n- bandwidth >= 4,32TB/s\n")
    (latency,), met = evaluate_stop_conditions(readme, two_workloads())
    assert latency.met is True and met is None
    words_only = parse_readme("# t\n\n## Stop Conditions\n- bandwidth >= 4,32TB/s\n- be as fast as cuBLAS\n")
    assert evaluate_stop_conditions(words_only, two_workloads()) == ([], None)


@pytest.mark.parametrize(
    "bullet",
    [
        "bandwidth utilization >= 90% of peak",  # (of one metric: `peak utilization >= 90%` is checked)
        "max iterations <= 20",
        "speedup vs v0 >= 2x",
        "correctness: max_abs_err <= 1e-3",
        "correctness: all workloads PASS (atol <= 1e-5, rtol <= 1e-5)",
        "max iterations <= 1,000",
        "compute-bound target: bf16 TFLOPS >= UNKNOWN",
    ],
)
def test_a_bullet_on_no_metric_kernelscope_measures_is_words_not_unchecked(bullet: str) -> None:
    """Before: every comparison kernelscope could not read held `stop_conditions_met` at null
    for good, an iteration cap, a `2x` speedup, a utilization or an atol as much as a bandwidth
    with a comma, so an agent meeting every target it measures was never told to stop. (A peak
    utilization is a target kernelscope checks now: test_stop_condition_utilization.py.)"""
    readme = parse_readme(f"# t\n\n## Stop Conditions\n- latency <= 30 us\n- {bullet}\n")
    assert readme.unchecked_stop_conditions == [], readme.unchecked_stop_conditions
    assert bullet.replace("`", "") in readme.stated_stop_conditions, readme.stated_stop_conditions
    assert evaluate_stop_conditions(readme, two_workloads())[1] is True


@pytest.mark.parametrize(
    "bullet",
    [
        "memory-bound target: bandwidth >= 3,870 GB/s",
        "compute-bound target: bf16 TFLOPS >= 185.4",
        "latency <= 5",
        "memory-bound target: bandwidth >= 4.3TB/s / 2",  # (`90% * 4.3TB/s = 3.87TB/s` is read now)
        "target >= 3,870 GB/s",
    ],
)
def test_a_bullet_on_a_measured_metric_it_cannot_read_stays_unchecked(bullet: str) -> None:
    readme = parse_readme(f"# t\n\n## Stop Conditions\n- latency <= 30 us\n- {bullet}\n")
    assert readme.unchecked_stop_conditions == [bullet], readme.unchecked_stop_conditions
    assert evaluate_stop_conditions(readme, two_workloads())[1] is None


def test_the_lens_says_how_many_stop_conditions_cannot_be_checked(tmp_path: Path) -> None:
    """Before: a README whose two stop conditions cannot be read showed `no stop conditions in
    README.md`, and one of two readable showed the one alone. A bullet that compares no number
    (the seed's `end-to-end latency: measured via ...`) is no condition that cannot be checked."""
    unreadable = "# t\n\n## Stop Conditions\n- bandwidth >= 4,32TB/s\n- be as fast as cuBLAS\n"
    lens = lens_of(tmp_path / "a", unreadable, [gpu_record("v0", 8.0, 2000.0)])
    assert lens.startswith("2 stop conditions in README.md, none kernelscope can check | next v1"), lens
    one = "# t\n\n## Stop Conditions\n- latency <= 10 us\n- bandwidth >= 4,32TB/s\n"
    lens = lens_of(tmp_path / "b", one, [gpu_record("v0", 8.0, 2000.0)])
    assert " | 1 stop condition cannot be checked | next v1" in lens, lens
    described = "# t\n\n## Stop Conditions\n- latency <= 10 us\n- end-to-end latency: measured via do_bench\n"
    lens = lens_of(tmp_path / "c", described, [gpu_record("v0", 8.0, 2000.0)])
    assert "cannot be checked" not in lens, lens
    assert evaluate_stop_conditions(parse_readme(described), two_workloads())[1] is False  # 20 us


def test_the_tooltip_names_unreadable_conditions_where_none_is_readable(tmp_path: Path) -> None:
    """Before: stop_condition_lines returned nothing at once where the README had no readable
    condition, so a README whose only target was `bandwidth >= 4,32TB/s` told the tooltip and
    the hover nothing of it."""
    unreadable = "# t\n\n## Stop Conditions\n- bandwidth >= 4,32TB/s\n- be as fast as cuBLAS\n"
    lens_of(tmp_path / "ws", unreadable, [gpu_record("v0", 8.0, 2000.0)])
    lines = stop_condition_lines(Workspace(tmp_path / "ws"))
    assert lines == ["bandwidth >= 4,32TB/s: cannot be checked"], lines


def old_and_atrex_records() -> list[dict[str, object]]:
    """v1: a kernelscope record written before the one rule, its statuses judged on its best
    configuration (5 us: met) where it states 20 us; v2: atrex's, no statuses, 8 us and 4500 GB/s."""
    v1 = gpu_record("v1", 20.0, 4400.0, score=2.0)
    v1["kernelscope"]["stop_conditions"] = [  # type: ignore[index]
        {"text": "latency <= 10 us", "kind": "latency", "target": 10.0, "unit": "us", "measured": 5.0, "met": True},
        {"text": "memory-bound target: bandwidth >= 4.32TB/s", "kind": "bandwidth", "target": 4320.0,
         "unit": "GB/s", "measured": 4400.0, "met": True},
    ]  # fmt: skip
    v2 = {
        "version": "v2",
        "performance": {"latency_us": 8.0, "bandwidth_gbps": 4500.0, "measurement_subject": "candidate"},
        "quality_gate": {"result": "PASS"},
    }
    return [gpu_record("v0", 40.0, 2000.0, score=1.0), v1, v2]


def test_compare_judges_any_record_by_the_readme_and_says_what_was_recorded(tmp_path: Path) -> None:
    """compare read the statuses a record stored: an old kernelscope record judged on its best
    configuration said `met` where the lens said 50%, and atrex's record (none stored) said
    nothing where the lens said met."""
    from kernelscope.daemon.engine.history.service import HistoryService

    lens_of(tmp_path / "ws", TWO_TARGETS, old_and_atrex_records())
    service = HistoryService(tmp_path / "ws", db_url=str(tmp_path / "e.sqlite"))
    old = service.compare("v0", "v1").gate_details["v1"]
    assert "stop condition latency <= 10 us: not met (recorded: met)" in old, old
    assert "stop condition memory-bound target: bandwidth >= 4.32TB/s: met" in old, old
    atrex = service.compare("v1", "v2").gate_details["v2"]
    assert "stop condition latency <= 10 us: met" in atrex, atrex
    assert "stop condition memory-bound target: bandwidth >= 4.32TB/s: met" in atrex, atrex


@pytest.mark.parametrize(("returned", "met"), [("v1", False), ("v2", True)])
def test_the_restart_report_judges_the_returned_record_by_the_readme(
    tmp_path: Path, returned: str, met: bool
) -> None:
    """The restart's report read the statuses the returned record stored: null for atrex's (none
    stored) where the lens said met, true for an old kernelscope record the lens put at 50%."""
    from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions

    records = {str(r["version"]): r for r in old_and_atrex_records()}
    lens_of(tmp_path / "ws", TWO_TARGETS, [records["v0"]])
    restart = PartialRestart(tmp_path / "ws", RestartOptions(agent="true"))
    before = restart._snapshot()
    (tmp_path / "ws" / "memory" / "v1.json").write_text(json.dumps({**records[returned], "version": "v1"}))
    _, report = restart._verify(before, None, "v1", [])
    assert report["stop_conditions_met"] is met, report


def test_the_restart_report_judges_by_the_readme_as_it_was_at_phase_1(tmp_path: Path) -> None:
    """Before: the report judged the returned version by the README the agent may have edited:
    `latency <= 10 us` relaxed to 25 us, a 20 us version was `stop_conditions_met: true` beside
    the 'targets changed' violation."""
    from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions

    records = {str(r["version"]): r for r in old_and_atrex_records()}
    lens_of(tmp_path / "ws", TWO_TARGETS, [records["v0"]])
    restart = PartialRestart(tmp_path / "ws", RestartOptions(agent="true"))
    before = restart._snapshot()
    (tmp_path / "ws" / "README.md").write_text(TWO_TARGETS.replace("latency <= 10 us", "latency <= 25 us"))
    v1 = {**records["v1"], "version": "v1"}
    v1["kernelscope"] = {k: v for k, v in v1["kernelscope"].items() if k != "stop_conditions"}  # type: ignore[attr-defined]
    (tmp_path / "ws" / "memory" / "v1.json").write_text(json.dumps(v1))
    violations, report = restart._verify(before, None, "v1", [])
    assert any(v.startswith("targets changed") for v in violations), violations
    assert report["stop_conditions_met"] is False, report  # 20 us against phase 1's 10 us


def test_compare_lists_stored_statuses_today_s_readme_does_not_state(tmp_path: Path) -> None:
    """Before: a stored status whose condition the README no longer states (a target since
    changed) was dropped unsaid, and with no README every stored status was."""
    from kernelscope.daemon.engine.history.service import HistoryService

    lens_of(tmp_path / "ws", TWO_TARGETS, old_and_atrex_records())
    (tmp_path / "ws" / "README.md").write_text(TWO_TARGETS.replace("latency <= 10 us", "latency <= 25 us"))
    details = (
        HistoryService(tmp_path / "ws", db_url=str(tmp_path / "e.sqlite")).compare("v0", "v1").gate_details
    )
    assert "stop condition latency <= 25 us: met" in details["v1"], details
    assert "stop condition recorded under an earlier README: latency <= 10 us: met" in details["v1"], details
    (tmp_path / "ws" / "README.md").unlink()
    details = (
        HistoryService(tmp_path / "ws", db_url=str(tmp_path / "f.sqlite")).compare("v0", "v1").gate_details
    )
    assert "stop condition latency <= 10 us: met (recorded; no README.md to judge by)" in details["v1"], (
        details
    )
