"""One number per fact: the score of a version, and its effect against its parent.

A version used to get two different "speedups": the lens showed the in-run geometric-mean
speedup the harness measured (v0 and the candidate interleaved in one run), the memory table
the ratio of two recorded latencies taken in different runs of the largest configuration.
They differ (23.01x vs 20.06x for the demo's v3), and both were called a speedup. Every
surface now asks `version_score`, which picks one definition in a fixed order and says which
it picked (`ScoreValue.kind`):

0. atrex v0.3's `performance.performance_score` / v0's, when both carry the same objective;
1. `kernelscope.score_vs_v0`: the in-run geometric-mean speedup over all configurations, with
   its 95% interval (`kernelscope.score_ci`), when the record has it (`kernelscope iterate`);
2. else the latency ratio v0 latency / version latency when both records have one (records of
   other tools), named a latency ratio, never a speedup;
3. else, when the README's primary metric is a bandwidth or a TFLOP/s and both records carry
   it, the ratio of the version's to v0's.

Every "best" is the version this score ranks highest (`best_version`, `best_score`).

Carried-forward numbers (an atrex pivot's) are never a score (`formats.atrex_fields.record_outcome`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kernelscope.daemon.engine.memory import atrex_fields, core
from kernelscope.daemon.engine.memory.core import _interval, _positive, kernelscope_block, latency_ratio
from kernelscope.protocol.history import ScoreValue
from kernelscope.protocol.memory import MemoryRecord, as_float
from kernelscope.protocol.record_rules import RECORD_METRIC, format_score
from kernelscope.protocol.workspace import MetricKind, ReadmeInfo

if TYPE_CHECKING:
    from kernelscope.daemon.engine.memory.records import MemoryEntry

_REL_ERR = re.compile(r"\brel_err[ =:]+([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def _score(value: float, kind: str, versus: str, ci: tuple[float, float] | None, source: str) -> ScoreValue:
    # Built without validation: the lens path scores a thousand versions per refresh.
    return ScoreValue.model_construct(value=value, kind=kind, versus=versus, ci=ci, source=source)


def version_score(
    record: MemoryRecord | dict[str, Any],
    baseline: MemoryRecord | None,
    kind: MetricKind | None = None,
    v0: atrex_fields.BaseWorkloads | None = None,
) -> ScoreValue | None:
    """The one score of a version against v0 (memory/core.py's rule), or None when nothing
    was measured on it (`v0`: the baseline's workloads, read once by a caller scoring many)."""
    found = core.score_parts(record, baseline, kind, v0)
    return None if found is None else _score(*found)


def score_value(
    record: MemoryRecord, baseline: MemoryRecord | None, kind: MetricKind | None = None
) -> float | None:
    """`version_score(...).value`: the number a table or lens prints for a version."""
    score = version_score(record, baseline, kind)
    return None if score is None else score.value


def previous_version(record: MemoryRecord) -> str | None:
    """The parent the record names (`comparison_with_previous.previous_version`)."""
    comparison = _performance_field(record, "comparison_with_previous")
    value = _field(comparison, "previous_version")
    return str(value) if isinstance(value, str) and value else None


def _field(holder: Any, name: str) -> Any:
    """`name` of a block read either as a dict (raw JSON) or as a model, whose fields the
    schema does not declare are in `model_extra`."""
    if holder is None:
        return None
    if isinstance(holder, dict):
        return holder.get(name)
    value = getattr(holder, name, None)
    if value is None and getattr(holder, "model_extra", None):
        value = holder.model_extra.get(name)
    return value


def _performance_field(record: MemoryRecord, name: str) -> Any:
    return _field(record.performance, name)


def parent_effect(
    record: MemoryRecord,
    parent: MemoryRecord | None,
    parent_version: str | None,
    experiment_metrics: dict[str, Any] | None = None,
    kind: MetricKind | None = None,
) -> ScoreValue | None:
    """The version's measured effect against its parent, in the first form recorded:
    kernelscope's in-run speedup vs the parent, the experiment's, atrex's authoritative
    (ABBA) improvement (a latency change at the pin, the objective score's gain in v0.3),
    else the ratio of the two recorded latencies."""
    if not atrex_fields.record_outcome(record).measured:
        return None
    if parent_version == "v0":  # one number per fact: against v0 that is the version's score
        return version_score(record, parent, kind)  # (with the README's metric, as every surface)
    versus = parent_version or "parent"
    block = kernelscope_block(record)
    in_run = _positive(block.get("score_vs_parent"))
    source = "kernelscope.score_vs_parent"
    if in_run is None:
        value = _field(_performance_field(record, "comparison_with_previous"), "speedup_vs_previous")
        in_run, source = _positive(value), "performance.comparison_with_previous.speedup_vs_previous"
    if in_run is None and experiment_metrics:
        in_run, source = (
            _positive(experiment_metrics.get("score_vs_parent")),
            "experiment.metrics.score_vs_parent",
        )
    if in_run is not None:
        # kernelscope iterate records no interval vs the parent yet; one recorded as
        # `kernelscope.score_vs_parent_ci` is shown ("1.75x vs v2 [1.70-1.80]")
        interval = (
            _interval(block.get("score_vs_parent_ci")) if source == "kernelscope.score_vs_parent" else None
        )
        if interval is not None and not interval[0] <= in_run <= interval[1]:
            interval = None
        return _score(in_run, "speedup", versus, interval, source)
    improvement = as_float(_performance_field(record, "authoritative_improvement_pct"))
    if improvement is not None and atrex_fields.objective_score(record.performance) is not None:
        # atrex v0.3 verifies the objective's score, not the latency: the gain is score
        # candidate/incumbent - 1 (score_verification_payload, index id 69770463870)
        return _score(
            1.0 + improvement / 100.0,
            "metric_ratio",
            versus,
            None,
            "performance.authoritative_improvement_pct",
        )
    if improvement is not None:
        return _score(
            -improvement, "latency_change_pct", versus, None, "performance.authoritative_improvement_pct"
        )
    theirs = atrex_fields.BaseWorkloads(parent) if parent is not None else None
    if (
        parent is not None
        and theirs is not None
        and atrex_fields.record_outcome(parent).measured
        and atrex_fields.workload_coverage(record, theirs) is None  # (no ratio of unlike geomeans)
    ):
        before, now = _positive(parent.metric("latency_us")), _positive(record.metric("latency_us"))
        by_latency = latency_ratio(record, parent, theirs) if before and now else None
        if by_latency is not None:
            return _score(by_latency[0], "latency_ratio", versus, None, by_latency[1])
    return None


def failure_text(record: MemoryRecord) -> str | None:
    """Why a version failed its gate, short: `wrong_result rel_err 0.67`."""
    if record.gate_passed:
        return None
    kind = None
    pitfalls = record.pitfalls_and_fixes
    if isinstance(pitfalls, list):
        for item in reversed(pitfalls):
            error_type = _field(item, "error_type")
            if isinstance(error_type, str) and error_type and error_type != "partial_restart":
                kind = error_type
                break
    correctness = record.correctness
    rel_err = as_float(_field(correctness, "rel_err"))
    if rel_err is None:
        rel_err = as_float(_field(correctness, "max_rel_err"))
    reason = _field(record.quality_gate, "failure_reason")
    if rel_err is None:
        # kernelscope's gate names the figure in its message ("... rel_err 1.43, max abs err ...")
        messages = [reason] + [
            _field(item, "error_message") for item in (pitfalls if isinstance(pitfalls, list) else [])
        ]
        for message in messages:
            found = _REL_ERR.search(message) if isinstance(message, str) else None
            if found:
                rel_err = as_float(found.group(1))
                break
    if kind is None and isinstance(reason, str) and reason.strip():
        kind = " ".join(reason.split())
        kind = kind if len(kind) <= 60 else kind[:59] + "…"
    parts = [kind or (record.gate_result or "FAIL").lower()]
    if rel_err is not None:
        parts.append(f"rel_err {rel_err:.3g}")
    return " ".join(parts)


SCORE_COLUMN = "score vs v0"


def score_cell(score: ScoreValue | None) -> str:
    """A table cell that names what the number is when it is not the in-run speedup."""
    if score is None:
        return "-"
    return format_score(score.value, score.kind, score.ci)


def score_table(
    entries: list[Any], kind: MetricKind | None = None
) -> tuple[list[str], list[list[str]], dict[str, ScoreValue | None]]:
    """(columns, rows, score per version) of a memory table whose one score column is
    `version_score`: the in-run geometric-mean speedup, or a latency ratio named as such.
    Latency is the recorded latency of the largest configuration, a measurement, not a score."""
    records = [e for e in entries if getattr(e, "record", None) is not None]
    baseline = next((e.record for e in records if e.number == 0), None)
    columns = ["version", "masked", "gate", SCORE_COLUMN, "latency (us, largest config)", "action"]
    rows: list[list[str]] = []
    scores: dict[str, ScoreValue | None] = {}
    for entry in records:
        record = entry.record
        outcome = atrex_fields.record_outcome(record)
        score = version_score(record, baseline, kind)
        scores[entry.version] = score
        latency = record.metric("latency_us") if outcome.measured else None
        optimization = record.optimization
        action = (
            optimization.get("action_category")
            if isinstance(optimization, dict)
            else getattr(optimization, "action_category", None)
        )
        rows.append(
            [
                entry.version,
                "yes" if entry.masked else "",
                record.gate_result or "-",
                score_cell(score) if outcome.measured else f"({outcome.describe()})",
                "-" if latency is None else f"{latency:.3f}",
                "" if action is None else str(action),
            ]
        )
    kinds = {score.kind for score in scores.values() if score is not None}
    if kinds == {"speedup"}:
        columns[3] = "speedup vs v0 (in-run geomean)"
    return columns, rows, scores


@dataclass
class VersionScore:
    version: str
    score: float | None
    passed: bool
    label: str | None = None  # "pivot", "blocked"...: an episode outcome, not a failed kernel
    carried_from: str | None = None  # its numbers are another version's, carried forward
    unchanged: bool = False  # within its run's own A/A noise band: no measurable change
    masked: bool = False  # hidden from the active memory: never named best or latest


def best_score(scores: list[VersionScore], among: set[str] | None = None) -> VersionScore | None:
    """The best version, the one rule every "best" follows (the kernel lens, the goal line,
    mask-half's keep, the probe's baseline): the highest score vs v0 among unmasked versions
    whose gate passed (only those in `among` when given); the later version wins a tie."""
    best = None
    for score in scores:
        if score.masked or not score.passed or score.score is None:
            continue
        if among is not None and score.version not in among:
            continue
        if best is None or best.score is None or score.score >= best.score:
            best = score
    return best


BY_SCORE = "highest score vs v0 among versions whose quality gate passed"

Figured = TypeVar("Figured")


def best_figure(found: list[tuple[Figured, float]], kind: MetricKind) -> tuple[Figured, float]:
    """The best of (version, figure) pairs in version order, by a metric of `kind`: the highest
    GB/s or TFLOP/s, the lowest latency; a tie goes to the later version."""
    pick = min if kind == "latency" else max
    return pick(reversed(found), key=lambda item: item[1])


def best_version(
    entries: list[MemoryEntry],
    kind: MetricKind | None,
    scores: list[VersionScore] | None = None,
    among: set[str] | None = None,
) -> tuple[str | None, str]:
    """The best version and the rule that chose it: the one every surface names (the file
    lens, the goal line, mask-half's keep, the probe's baseline; the kernel lens asks
    `best_score` of the same scores). `kind` is the README's primary metric, which scores a
    version where it and v0 record no latency (core.score_parts); `scores`, when the caller
    has them, are `scores_by_kind(entries, kind)`.

    With no score vs v0 anywhere (no v0 record, or one that measured nothing), the README's
    metric decides directly (highest GB/s or TFLOP/s), then the lowest latency (CPU-interpreter
    runs record no GPU throughput), then the latest passing version."""
    top = best_score(scores_by_kind(entries, kind) if scores is None else scores, among)
    if top is not None:
        return top.version, BY_SCORE
    passing = [
        e
        for e in entries
        if e.record is not None
        and not e.masked
        and e.record.gate_passed
        and (among is None or e.version in among)
    ]
    measured = [e for e in passing if e.record and atrex_fields.record_outcome(e.record).measured]
    metrics: list[MetricKind] = [kind] if kind in ("bandwidth", "tflops") else []
    for by in [*metrics, "latency"]:
        name = RECORD_METRIC[by]
        found = [(e, v) for e in measured if (v := _positive(e.record.metric(name) if e.record else None))]
        if found:
            direction = "lowest" if by == "latency" else "highest"
            chosen = best_figure(found, by)[0]
            return chosen.version, (
                f"no version has a score vs v0: {direction} performance.{name} "
                "among versions whose quality gate passed"
            )
    if passing:
        return passing[-1].version, "no version has a score vs v0: kept the latest passing version"
    return None, "no version has a passing quality gate: no best version to keep"


def memory_scores(entries: list[MemoryEntry], readme: ReadmeInfo | None) -> list[VersionScore]:
    """A score per readable version, the one every surface shows (`version_score`): atrex's
    objective score ratio when v0 and the version share one, the in-run geometric-mean speedup
    vs v0 when the record has it (`kernelscope.score_vs_v0`), else v0 latency / vN latency,
    else vN metric / v0 metric for the README's bandwidth or TFLOP/s target."""
    return scores_by_kind(entries, readme.primary_kind if readme else None)


def scores_by_kind(entries: list[MemoryEntry], kind: MetricKind | None) -> list[VersionScore]:
    """`memory_scores` for a README whose primary metric is `kind`."""
    records = [e for e in entries if e.record is not None]
    base = next((e.record for e in records if e.number == 0), None)
    scores = []
    for entry in records:
        record = entry.record
        assert record is not None
        outcome = atrex_fields.record_outcome(record)
        if not outcome.measured:  # a carried-forward latency is not this version's measurement
            scores.append(
                VersionScore(
                    entry.version,
                    None,
                    record.gate_passed,
                    outcome.label,
                    outcome.carried_from,
                    masked=entry.masked,
                )
            )
            continue
        score = score_value(record, base, kind)
        unchanged = kernelscope_block(record).get("verdict") == "no measurable change"
        scores.append(
            VersionScore(
                entry.version,
                score,
                record.gate_passed,
                outcome.label,
                unchanged=unchanged,
                masked=entry.masked,
            )
        )
    return scores


class IncrementalScores:
    """`memory_scores(entries, readme)` for a daemon that scans the same memory/ again and again
    with kept reads (`FileReads` hands back the same entry objects for unchanged files): only
    versions whose entry is new are scored. A version's score depends on its own record, v0's
    and the README's target kind; when v0 or the kind changes, everything is scored again."""

    def __init__(self) -> None:
        self._base: MemoryEntry | None = None
        self._kind: MetricKind | None = None
        self._known: dict[int, tuple[MemoryEntry, VersionScore]] = {}
        self._lock = threading.Lock()

    def scores(self, entries: list[MemoryEntry], readme: ReadmeInfo | None) -> list[VersionScore]:
        base = next((e for e in entries if e.number == 0 and e.record is not None), None)
        kind = readme.primary_kind if readme else None
        with self._lock:
            if base is not self._base or kind != self._kind:
                self._base, self._kind, self._known = base, kind, {}
            known = self._known
            readable = [e for e in entries if e.record is not None]
            fresh = [e for e in readable if known.get(id(e), (None,))[0] is not e]
            if fresh:
                # memory_scores takes v0 from the list it is given: give it v0 with the new entries
                with_base = fresh if base is None or base in fresh else [base, *fresh]
                for entry, score in zip(with_base, memory_scores(with_base, readme), strict=True):
                    known[id(entry)] = (entry, score)
            self._known = {id(e): known[id(e)] for e in readable}
            return [self._known[id(e)][1] for e in readable]
