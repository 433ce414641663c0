"""A README stop condition checked by `kernelscope iterate`: its target and its unit agree, and
one that cannot be evaluated is neither met nor not met.

The README's `bandwidth >= 4.32TB/s` was recorded as `"target": 4320.0, "unit": "TB/s"` (the
value converted to GB/s, the unit left as written) and printed `measured - vs 4320` with no
unit. The target is in the canonical unit (GB/s, TFLOPS, us) and so is the unit named beside
it; a record written before says the written unit beside the canonical value, and is read so.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.views.command_answers import stop_condition_line
from kernelscope.daemon.engine.views.lens_text import file_lens
from kernelscope.daemon.engine.workflows.iterate import evaluate_stop_conditions
from kernelscope.daemon.engine.workspace.readme import parse_readme
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.bench import BenchResult, ConfigResult
from kernelscope.protocol.commands import (
    StopConditionStatus,
    recorded_stop_conditions,
    stop_conditions_met,
)

README = "# t\n\n## Stop Conditions\n- memory-bound target: bandwidth >= 4.32TB/s\n- latency <= 0.5 ms\n"


def bench(gbps: float, mode: str = "gpu", passed: bool = True) -> BenchResult:
    config = ConfigResult(name="n=4096", passed=passed, gbps=gbps, candidate_ms=0.4)
    return BenchResult(
        status="ok" if passed else "gate_failed",
        passed=passed,
        mode=mode,
        workspace="/w",
        candidate="/w/kernel.py",
        baseline="reference",
        entry_point="kernel_fn",
        configs=[config],
    )


def test_a_target_is_recorded_and_printed_in_the_unit_of_its_value() -> None:
    (bandwidth, latency), met = evaluate_stop_conditions(parse_readme(README), bench(3870.0))
    assert (bandwidth.target, bandwidth.unit, bandwidth.measured) == (4320.0, "GB/s", 3870.0)
    assert (latency.target, latency.unit) == (500.0, "us") and latency.met and not met
    line = stop_condition_line(bandwidth)
    assert line.endswith("not met, measured 3870 vs 4320 GB/s"), line
    assert stop_condition_line(latency).endswith("met, measured 400 vs 500 us")


def test_a_record_written_before_reads_its_target_in_the_canonical_unit() -> None:
    old = {
        "text": "memory-bound target: bandwidth >= 4.32TB/s",
        "kind": "bandwidth",
        "target": 4320.0,
        "unit": "TB/s",
        "measured": None,
        "met": False,
        "note": None,
    }
    status = StopConditionStatus.model_validate(old)
    assert (status.target, status.unit) == (4320.0, "GB/s")
    # (nothing measured and "met": false: an unevaluated condition as records said it then)
    assert stop_condition_line(status).endswith(": not evaluated, target 4320 GB/s")


def test_a_condition_the_interpreter_cannot_evaluate_is_not_evaluated_not_unmet() -> None:
    """Under the interpreter the line read `not met, measured - vs 4320 GB/s (not evaluated:
    ...)` and `iterate --json` said `met: false`, `stop_conditions_met: false`: unknown."""
    (bandwidth, latency), met = evaluate_stop_conditions(parse_readme(README), bench(3870.0, "interpreter"))
    assert bandwidth.met is None and latency.met is None and met is None
    assert bandwidth.note == "interpreter timings are not GPU figures"
    line = stop_condition_line(bandwidth)
    assert "not met" not in line, line
    assert line.endswith(": not evaluated (interpreter timings are not GPU figures), target 4320 GB/s"), line
    assert json.loads(bandwidth.model_dump_json())["met"] is None


def test_a_failed_gate_evaluates_no_condition() -> None:
    (bandwidth, _), met = evaluate_stop_conditions(parse_readme(README), bench(9999.0, passed=False))
    assert bandwidth.met is None and bandwidth.measured is None and met is None
    assert "': not evaluated (the gate failed" in stop_condition_line(bandwidth)


def test_all_met_is_true_only_when_every_condition_is_met() -> None:
    def status(met: bool | None) -> StopConditionStatus:
        return StopConditionStatus(text="t", kind="latency", target=1.0, unit="us", measured=1.0, met=met)

    assert stop_conditions_met([status(True), status(True)]) is True
    assert stop_conditions_met([status(True), status(None)]) is None  # unknown is no reason to stop
    assert stop_conditions_met([status(False), status(None)]) is False  # one missed is missed
    assert stop_conditions_met([]) is False


def test_records_written_before_read_an_unevaluated_condition_as_not_evaluated() -> None:
    """What iterate recorded before (and restart's report read as `stop_conditions_met:
    false`): met false, nothing measured, the reason in the note, or none on a failed gate."""
    old = {"text": "bw", "kind": "bandwidth", "target": 4320.0, "unit": "GB/s", "measured": None}
    interpreter = {**old, "met": False, "note": "not evaluated: interpreter timings are not GPU figures"}
    failed_gate = {**old, "met": False, "note": None}
    unmet = {**old, "measured": 3870.0, "met": False, "note": None}
    read = recorded_stop_conditions([interpreter, failed_gate, unmet, {"text": "no kind"}])
    assert [s.met for s in read] == [None, None, False]
    assert read[0].state() == "not evaluated (interpreter timings are not GPU figures)"
    assert read[1].state() == "not evaluated" and read[2].state() == "not met"
    assert stop_conditions_met(read[:2]) is None


def record(version: str, latency_us: float) -> dict[str, object]:
    return {
        "version": version,
        "performance": {"latency_us": latency_us},
        "quality_gate": {"result": "PASS", "failure_reason": None},
        "correctness": {"status": "PASS"},
        "kernelscope": {"mode": "interpreter"},
    }


def test_the_file_lens_does_not_call_an_interpreter_latency_a_met_gpu_target(tmp_path: Path) -> None:
    """The lens said `best 1554 us v1, 64342% of target (met)` of a README's `latency <= 1000 ms`
    measured only by the CPU interpreter."""
    (tmp_path / "README.md").write_text("# t\n\n## Stop Conditions\n- latency <= 1000 ms\n")
    (tmp_path / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (tmp_path / "memory").mkdir()
    for version, latency in (("v0", 3000.0), ("v1", 1554.0)):
        (tmp_path / "memory" / f"{version}.json").write_text(json.dumps(record(version, latency)))
    lens = file_lens(Workspace(tmp_path))
    assert "(met)" not in lens and "% of target" not in lens, lens
    assert "best v1: not evaluated (interpreter timings are not GPU figures)" in lens, lens


MET_BW = {"text": "bw", "kind": "bandwidth", "target": 4320, "unit": "GB/s", "measured": 5000, "met": True}
# a missed condition of a kind this kernelscope does not know (a newer writer's)
P99_MISSED = {
    "text": "p99 <= 5 us",
    "kind": "latency_p99",
    "target": 5,
    "unit": "us",
    "measured": 9,
    "met": False,
}


def test_an_entry_from_a_newer_writer_is_read_and_one_unreadable_is_left_out() -> None:
    """Entries were validated with extra keys forbidden: one key added by a newer writer dropped
    the entry. One this version cannot read (a kind added later) is left out (compare counts
    it); no answer is taken from stored entries any more (stop_rule.readme_verdict)."""
    (newer,) = recorded_stop_conditions([{**MET_BW, "source": "README.md"}])
    assert newer.met is True and newer.measured == 5000
    assert [s.text for s in recorded_stop_conditions([MET_BW, P99_MISSED])] == ["bw"]  # p99's is left out
    assert len(recorded_stop_conditions([MET_BW, {k: v for k, v in MET_BW.items() if k != "target"}])) == 1


def test_a_record_with_no_stop_conditions_reads_as_iterate_said_it() -> None:
    """iterate says `stop_conditions_met: false` where the README states none (and records `[]`);
    restart's report read the same record as null. Both now judge today's README on the record
    (stop_rule.readme_verdict), whoever wrote it."""
    _, met = evaluate_stop_conditions(parse_readme("# t\n"), bench(5000.0))
    assert readme_verdict(parse_readme("# t\n"), {"performance": {"latency_us": 5.0}}) == ([], met)
    assert met is False


def _workspace(root: Path, readme: str, records: list[dict[str, object]]) -> Workspace:
    root.mkdir(exist_ok=True)
    (root / "README.md").write_text(readme)
    (root / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (root / "memory").mkdir()
    for item in records:
        (root / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    return Workspace(root)


def measured(version: str, latency_us: float, mode: str, score: float | None = None) -> dict[str, object]:
    item = record(version, latency_us)
    block: dict[str, object] = {"mode": mode, "comparable": mode == "gpu"}
    if score is not None:
        block["score_vs_v0"] = score
    item["kernelscope"] = block
    return item


LATENCY_10US = "# t\n\n## Stop Conditions\n- latency <= 10 us\n"


def test_the_file_lens_tells_a_target_a_gpu_version_met_behind_an_interpreter_best(tmp_path: Path) -> None:
    """The best version (by the in-run score) was measured by the interpreter: the lens said
    `best v2: not evaluated (interpreter timings are not GPU figures)` and nothing of v1, a GPU
    version that met the target (8 us against 10 us)."""
    records = [
        measured("v0", 30.0, "gpu"),
        measured("v1", 8.0, "gpu", score=3.75),
        measured("v2", 2400.0, "interpreter", score=5.0),
    ]
    lens = file_lens(_workspace(tmp_path, LATENCY_10US, records))
    assert "target latency <= 10 us | met by v1: 8 us, 125% of target |" in lens, lens
    # the one best-version rule still names v2, and says its figure is not a GPU one
    assert "best v2: not evaluated (interpreter timings are not GPU figures)" in lens, lens


def test_the_file_lens_gives_the_best_gpu_figure_where_no_version_met_the_target(tmp_path: Path) -> None:
    records = [
        measured("v0", 30.0, "gpu"),
        measured("v1", 20.0, "gpu", score=1.5),
        measured("v2", 2400.0, "interpreter", score=5.0),
    ]
    lens = file_lens(_workspace(tmp_path, LATENCY_10US, records))
    assert "target latency <= 10 us | best GPU figure 20 us v1, 50% of target |" in lens, lens
    assert "(met)" not in lens and "met by" not in lens, lens
    assert "best v2: not evaluated (interpreter timings are not GPU figures)" in lens, lens


def test_the_file_lens_names_a_gpu_version_that_met_the_target_beside_a_best_that_did_not(
    tmp_path: Path,
) -> None:
    """The best by score (v1, measured against v0 in its own run) missed the target; v2, scored
    lower in its run, met it: the lens said only v1's figure."""
    records = [
        measured("v0", 30.0, "gpu"),
        measured("v1", 12.0, "gpu", score=3.0),
        measured("v2", 9.0, "gpu", score=2.5),
    ]
    lens = file_lens(_workspace(tmp_path, LATENCY_10US, records))
    assert (
        "target latency <= 10 us | met by v2: 9 us, 111% of target | best 12 us v1, 83% of target |" in lens
    )
    # where the best met it, the lens reads as before
    records[2] = measured("v2", 11.0, "gpu", score=2.5)
    records[1] = measured("v1", 9.0, "gpu", score=3.0)
    for item in records:
        (tmp_path / "memory" / f"{item['version']}.json").write_text(json.dumps(item))
    lens = file_lens(Workspace(tmp_path))
    assert "target latency <= 10 us | best 9 us v1, 111% of target (met) |" in lens, lens


def test_a_condition_the_reference_gives_no_measure_for_names_the_function_to_add() -> None:
    """A GB/s or TFLOP/s target whose reference defines no bytes_moved/flops is never evaluated,
    so stop_conditions_met stays null on every iteration; the note said only `the reference
    module gives no bytes_moved/flops to compute this metric`, neither which one nor what to do."""
    readme = parse_readme("# t\n\n## Stop Conditions\n- bandwidth >= 4.32TB/s\n- bf16 TFLOPS >= 185.4T\n")
    (bandwidth, tflops), met = evaluate_stop_conditions(readme, bench(0.0))
    assert bandwidth.met is None and tflops.met is None and met is None  # unknown is never met
    assert bandwidth.note is not None and "bytes_moved(config)" in bandwidth.note, bandwidth.note
    assert "flops(config)" in (tflops.note or "") and "bytes_moved" not in (tflops.note or ""), tflops.note
    for note in (bandwidth.note, tflops.note or ""):
        assert "define it in the reference module" in note and "no iteration evaluates" in note, note


def test_compare_says_how_many_stop_condition_entries_it_could_not_read(tmp_path: Path) -> None:
    """compare listed the entries it could read and left out the rest without a word: a missed
    condition of a kind added later vanished and the met one read as the whole story."""
    from kernelscope.daemon.engine.history.service import HistoryService

    v1 = measured("v1", 8.0, "gpu", score=3.75)
    v1["kernelscope"] = {**v1["kernelscope"], "stop_conditions": [MET_BW, P99_MISSED, "not an entry"]}  # type: ignore[dict-item]
    _workspace(tmp_path / "ws", LATENCY_10US, [measured("v0", 30.0, "gpu"), v1])
    comparison = HistoryService(tmp_path / "ws", db_url=str(tmp_path / "exp.sqlite")).compare("v0", "v1")
    details = comparison.gate_details["v1"]
    # (the README's condition judged on the record, stop_rule.readme_verdict; `bw`, stored by
    # an older README, is no condition of today's)
    assert "stop condition latency <= 10 us: met" in details and "stop condition bw: met" not in details
    assert "2 stop conditions left out (entries this kernelscope cannot read)" in details, details
    assert not any("left out" in line for line in comparison.gate_details["v0"])
    assert "2 stop conditions left out" in comparison.markdown
