"""The fields today's atrex supervisor adds to a memory record, read where they are
(alibaba/atrex-kernel-agent, Aug 2026; daemon/engine/workspace/atrex.py reads the supervisor's
own files): `experience{experiment_count, experiments[...]}`, `open_directions[{direction,
rationale}]`, `long_horizon{status, ...}` and `performance.{latency_us_by_shape,
speedup_vs_ref_geomean, measurement_subject, carried_from_version}`. A pivot, blocked, rejected
or interrupted episode still gets a record (gate FAIL, no commit), whose latency may be the
incumbent's carried forward: that is not a measurement of the version.

Which atrex versions: records of v0.2 (the pin, 16f7ec4) and of v0.3.0. v0.3.0 scores by an
objective (docs/releases/v0.3.0.md @ac1f588: "the arithmetic mean of per-shape speedups
consistently across evaluation and promotion"): every record it writes, v0 included, carries
`performance.performance_objective` ("shape_speedup_arithmetic_mean") and
`performance.performance_score` (that mean speedup over the reference), and
`speedup_vs_ref_geomean` is null (long_horizon/campaign.py `_memory_record`,
`_outcome_memory_record` @e68a2935, index id 62458180674; orchestrator/session_io.py
`_record_local_test_result`, index id 68632735111). `reference_speedup` reads the objective's
score when one is recorded, else the v0.2 geomean, and names which; `objective_ratio` compares
two records only when they carry the same objective, as atrex's own dashboard does (its design
doc, index id 71559421696: records of different objectives are not one comparable curve).

Pydantic-free on purpose: the records are read as raw dicts too (the CLI's fast path)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

from kernelscope.protocol import record_rules
from kernelscope.protocol.record_rules import as_float, ratio
from kernelscope.protocol.record_rules import section_get as _get

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from kernelscope.protocol.memory import MemoryRecord

# long_horizon.status values of records that did not promote a new kernel
NOT_PROMOTED = {"pivot", "blocked", "rejected", "interrupted", "invalid_handoff", "failed"}
# measurement_subject values that mean the numbers were measured on this version's kernel
MEASURED_SUBJECTS = {"candidate", "episode_head", None}


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (memory files are free-form JSON)."""
    return value if isinstance(value, dict) else {}


def short_text(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if value is not None else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def workload_label(name: str, limit: int = 24) -> str:
    """A workload's name as a one-line cell: a workload.jsonl uuid by its first 8 characters
    (as the evaluator's failures name it), any other name whole (`n=16777216`), or cut with an
    ellipsis past `limit`."""
    return name[:8] if _UUID.fullmatch(name) else short_text(name, limit)


class RecordOutcome:
    """How to show one record: measured or not, and what happened to it. (Plain classes here
    and below: a named tuple's class costs the CLI's fast path a millisecond at start-up.)"""

    __slots__ = ("carried_from", "label", "measured")

    def __init__(self, label: str | None, carried_from: str | None, measured: bool) -> None:
        self.label = label  # "pivot", "blocked"... (None for an ordinary record)
        self.carried_from = carried_from  # the version whose numbers a record carries forward
        self.measured = measured  # its performance numbers were measured on its own kernel

    def describe(self) -> str:
        if self.label and self.carried_from:
            return f"{self.label} (numbers carried from {self.carried_from}, not measured)"
        if self.carried_from:
            return f"numbers carried from {self.carried_from}, not measured"
        return self.label or ""


def record_outcome(record: MemoryRecord | dict[str, Any]) -> RecordOutcome:
    """A pivot/blocked episode's record is labelled; carried-forward numbers are not measurements."""
    performance = _get(record, "performance")
    long_horizon = _get(record, "long_horizon")
    status = _get(long_horizon, "status")
    label = str(status) if isinstance(status, str) and status in NOT_PROMOTED else None
    carried = _get(performance, "carried_from_version")
    subject = _get(performance, "measurement_subject")
    carried_from = str(carried) if isinstance(carried, str) and carried else None
    measured = carried_from is None and subject in MEASURED_SUBJECTS
    if subject == "unavailable":
        measured = False
    return RecordOutcome(label=label, carried_from=carried_from, measured=measured)


class ExperimentNote:
    """One of `experience.experiments[]`."""

    __slots__ = ("decision", "hypothesis", "name", "number", "result")

    def __init__(
        self, number: int | None, name: str, decision: str, result: str, hypothesis: str = ""
    ) -> None:
        self.number = number  # the record's `index`
        self.name, self.decision, self.result, self.hypothesis = name, decision, result, hypothesis

    def line(self) -> str:
        head = f"{self.number}. " if self.number is not None else ""
        decision = f" [{self.decision}]" if self.decision else ""
        result = f": {self.result}" if self.result else ""
        return f"{head}{self.name}{decision}{result}"


def experiments(record: MemoryRecord | dict[str, Any]) -> list[ExperimentNote]:
    """`experience.experiments[]`, one note each (name, decision, result)."""
    items = _get(_get(record, "experience"), "experiments")
    notes = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        notes.append(
            ExperimentNote(
                number=index if isinstance(index, int) and not isinstance(index, bool) else None,
                name=short_text(item.get("name") or item.get("change") or "?", 80),
                decision=short_text(item.get("decision"), 24),
                result=short_text(item.get("result"), 120),
                hypothesis=short_text(item.get("hypothesis"), 120),
            )
        )
    return notes


def open_directions(record: MemoryRecord | dict[str, Any]) -> list[str]:
    """`open_directions[]`: strings, or `{direction, rationale}` objects."""
    items = _get(record, "open_directions")
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            text = item.get("direction") or item.get("description") or json.dumps(item)
        else:
            text = item
        if text:
            found.append(short_text(text, 160))
    return found


def latency_by_shape(record: MemoryRecord | dict[str, Any]) -> dict[str, float]:
    """`performance.latency_us_by_shape` as floats (workload uuid or shape id -> us)."""
    value = _get(_get(record, "performance"), "latency_us_by_shape")
    if not isinstance(value, dict):
        return {}
    found = {str(k): as_float(v) for k, v in value.items()}
    return {k: v for k, v in found.items() if v is not None}


# The score's `source` where a version's latency ratio is taken over v0's workloads only
# (core.latency_ratio): the one sign `workloads_note` reads.
OVER_V0_WORKLOADS = "performance.latency_us_by_shape"


class BaseWorkloads:
    """v0's side of every comparison of workloads with it, read once per v0 record: `memory
    list` compares a thousand versions with the same v0, and re-reading its workloads and
    geomean for each row cost it ~60% on SOL-ExecBench workspaces. `latencies`: its positive
    per-workload latencies; `geomean`: its recorded latency IS their geomean (`grown_workloads`).
    Built by the caller from the record it holds, so it cannot outlive a change of it."""

    __slots__ = ("geomean", "latencies")

    def __init__(self, baseline: Any) -> None:
        self.latencies = {name: us for name, us in latency_by_shape(baseline).items() if us > 0}
        self.geomean = bool(self.latencies) and _latency_is_geomean(
            _get(baseline, "performance"), self.latencies
        )


def _geomean(values: Iterable[float]) -> float:
    """(protocol/stats.py's geomean, which this module does not import: it brings `statistics`
    and `random` onto the CLI's fast path)"""
    found = list(values)
    return math.exp(sum(math.log(value) for value in found) / len(found))


def _latency_is_geomean(performance: Any, latencies: dict[str, float]) -> bool:
    """SOL's test_kernel.py writes `latency_us_geomean` equal to `latency_us` (its own marker);
    else the recorded latency is the geomean of `latencies`, to 0.1% or as rounded by hand to
    the decimals it is written with, two significant digits at least (2.2 for 2.2146)."""
    recorded = as_float(_get(performance, "latency_us"))
    if recorded is None or not recorded > 0:
        return False
    if as_float(_get(performance, "latency_us_geomean")) == recorded:
        return True
    if not latencies:
        return False
    geomean = _geomean(latencies.values())
    if math.isclose(recorded, geomean, rel_tol=1e-3):
        return True
    written = repr(recorded)
    if "e" in written or "." not in written:
        return False
    decimals = len(written.split(".")[1].rstrip("0"))
    return recorded * 10**decimals >= 10 and round(geomean, decimals) == recorded


GEOMEAN, SLOWEST = "geomean", "slowest"


def latency_figure(record: Any) -> str | None:
    """Which figure a record's `performance.latency_us` is: GEOMEAN over its workloads (atrex's
    marker `latency_us_geomean` beside it, or equal to the geomean of its `latency_us_by_shape`:
    `_latency_is_geomean`), SLOWEST where it is its slowest workload's (kernelscope's iterate
    before it wrote the geomean, and still outside SOL-ExecBench and Atrex-Bench), else None
    (no per-workload latencies to tell by)."""
    performance = _get(record, "performance")
    recorded = as_float(_get(performance, "latency_us"))
    if recorded is None or not recorded > 0:
        return None
    latencies = {name: us for name, us in latency_by_shape(record).items() if us > 0}
    if _latency_is_geomean(performance, latencies):  # (the marker first: no latencies needed)
        return GEOMEAN
    if not latencies:
        return None
    return SLOWEST if math.isclose(recorded, max(latencies.values()), rel_tol=1e-3) else None


class LatencyPair:
    """Two records' latencies as one figure (`figure`), or None each and `why` not (a plain
    class: typing's NamedTuple costs the CLI fast path its import)."""

    __slots__ = ("a", "b", "figure", "why")

    def __init__(self, a: float | None, b: float | None, figure: str | None, why: str | None = None) -> None:
        self.a, self.b, self.figure, self.why = a, b, figure, why


def comparable_latencies(a: Any, b: Any, names: tuple[str, str] = ("a", "b")) -> LatencyPair:
    """Records `a` and `b`'s latencies where they state the same figure (`latency_figure`);
    where one states the geomean and the other its slowest workload's (records from before and
    after iterate wrote the geomean), both geomeans over the workloads they share, from their
    `latency_us_by_shape`, else None and why; as recorded where either figure is unknown.
    Iterate's latency delta, the latency ratio and score vs v0 (core.latency_ratio, summary_row)
    and compare's latency row take them (`names`: the records' in `why`)."""
    before = as_float(_get(_get(a, "performance"), "latency_us"))
    now = as_float(_get(_get(b, "performance"), "latency_us"))
    if not (before and before > 0 and now and now > 0):
        return LatencyPair(None, None, None)
    figures = latency_figure(a), latency_figure(b)
    if figures[0] == figures[1] or None in figures:  # (one unknown: as recorded, unnamed)
        return LatencyPair(before, now, figures[0] if figures[0] == figures[1] else None)
    mine = [{name: us for name, us in latency_by_shape(r).items() if us > 0} for r in (a, b)]
    shared = sorted(set(mine[0]) & set(mine[1]))
    if not shared:
        why = ", ".join(f"{name}'s {figure}" for name, figure in zip(names, figures, strict=True))
        return LatencyPair(
            None, None, None, f"unlike latency figures ({why}), no shared workloads to recompute"
        )
    over = [_geomean([side[name] for name in shared]) for side in mine]
    return LatencyPair(over[0], over[1], f"{GEOMEAN} over {len(shared)} shared workloads")


def workload_coverage(record: Any, base: BaseWorkloads) -> tuple[int, int] | None:
    """(measured, of) when a record that did NOT pass its gate has figures over part of v0's
    workloads (`base`, v0's record read once), else None (complete, unknown, or a passing record).

    SOL-ExecBench's test_kernel.py (`_summarize`, atrex 16f7ec4 reference/test_kernel.py
    L119-164, unchanged at 098ce3f) takes the geomean latency and the geomean speedup over the
    workloads that PASSED only, and writes 0.0 for both when none did; `_record_memory` stores
    them as `latency_us` and `speedup_vs_ref_geomean`, the passed workloads' latencies as
    `latency_us_by_shape`. A failed version's geomean over 1 workload is no figure beside v0's
    over 3. Only a failed record: one that passed ran every workload it was given, and a
    workload set that changed since v0 (workload.jsonl grown or trimmed) or names written by
    another tool (atrex keys a workload by its uuid, kernelscope's iterate by its
    configuration's name) is no sign of a partial run. Unknown where the record keeps no
    `latency_us_by_shape`, or names workloads none of which v0 names."""
    if record_rules.gate_result(_get(record, "quality_gate"), _get(record, "correctness")) == "PASS":
        return None
    keys = _get(_get(record, "performance"), "latency_us_by_shape")
    if not isinstance(keys, dict):
        return None
    wanted = set(base.latencies)
    if keys and not wanted & set(keys):
        return None  # (names of another tool: nothing known; none at all is SOL's "none passed")
    mine = {name for name, us in latency_by_shape(record).items() if us > 0}
    if wanted <= mine:
        return None
    return len(wanted & mine), len(wanted)


def coverage_text(coverage: tuple[int, int] | None) -> str | None:
    """`1 of 3 workloads` (None for a complete or unknown coverage)."""
    return None if coverage is None else f"{coverage[0]} of {coverage[1]} workloads"


def grown_workloads(mine: dict[str, float], base: BaseWorkloads) -> list[str] | None:
    """v0's workloads, when the record's positive per-workload latencies (`mine`) cover every
    one of them and more (workload.jsonl grown since v0), else None. Its recorded latency (SOL's
    geomean over all its workloads) then counts workloads v0 never ran: a score vs v0 is taken
    over v0's workloads only (core.latency_ratio), whatever its gate, as `workloads_note` says.
    Only where the base's recorded latency IS that geomean (`BaseWorkloads.geomean`: SOL's
    test_kernel.py writes it so, and kernelscope's iterate in SOL-ExecBench and Atrex-Bench
    workspaces); a base recorded with its slowest configuration's latency (iterate elsewhere,
    and in those workspaces before it wrote the geomean) is compared by `comparable_latencies`,
    and a geomean of per-workload ratios beside other versions' ratios of slowest
    configurations would rank unlike figures."""
    if not base.geomean or not set(base.latencies) < set(mine):
        return None
    return list(base.latencies)


def workloads_note(record: Any, base: BaseWorkloads, score_source: str | None) -> str | None:
    """What a surface says beside a record's latency about its workloads against v0's: `1 of 3
    workloads` (part of them: no score, `workload_coverage`), `scored over v0's 3 of its 4
    workloads` where its score (`score_source`, the score's own `source`) was taken so
    (`OVER_V0_WORKLOADS`), else None."""
    part = coverage_text(workload_coverage(record, base))
    if part is not None or score_source != OVER_V0_WORKLOADS:
        return part
    mine = len([us for us in latency_by_shape(record).values() if us > 0])
    return f"scored over v0's {len(base.latencies)} of its {mine} workloads"


# performance_objective values and what their score aggregates, in the words surfaces show
MEAN_OF_SHAPE_SPEEDUPS = "shape_speedup_arithmetic_mean"
AGGREGATES = {MEAN_OF_SHAPE_SPEEDUPS: "mean over shapes"}
GEOMEAN = "geomean"  # speedup_vs_ref_geomean: atrex v0.2 and older, SOL's test_kernel.py at the pin


class ReferenceSpeedup:
    """A record's speedup over its problem's reference, and what it aggregates over the
    shapes (`aggregate`: "mean over shapes" or "geomean")."""

    __slots__ = ("aggregate", "value")

    def __init__(self, value: float, aggregate: str) -> None:
        self.value, self.aggregate = value, aggregate


def objective_score(performance: Any) -> tuple[str, float] | None:
    """(objective, score) when a performance section or RESULT_JSON object names an objective
    kernelscope knows (`AGGREGATES`: a speedup over the reference, higher is better) and a
    positive finite `performance_score`. Under any other objective atrex still writes
    `speedup_vs_ref_geomean` (session_io.py nulls it only under the mean objective), so that
    record is read as a v0.2 one rather than ranked by a score whose direction is unknown."""
    objective = _get(performance, "performance_objective")
    score = as_float(_get(performance, "performance_score"))
    if isinstance(objective, str) and objective in AGGREGATES and score is not None and score > 0:
        return str(objective), score
    return None


def reference_speedup(performance: Any) -> ReferenceSpeedup | None:
    """The speedup over the reference a performance section (or a gate's RESULT_JSON object)
    records: the objective's score when there is one (atrex v0.3), else
    `speedup_vs_ref_geomean` (v0.2 and older)."""
    found = objective_score(performance)
    if found is not None:
        return ReferenceSpeedup(found[1], AGGREGATES[found[0]])
    geomean = as_float(_get(performance, "speedup_vs_ref_geomean"))
    # 0.0 is SOL test_kernel.py's "no workload passed" (`_geomean` of nothing), no speedup
    return None if geomean is None or not geomean > 0 else ReferenceSpeedup(geomean, GEOMEAN)


def speedup_vs_reference(
    record: MemoryRecord | dict[str, Any], base: BaseWorkloads | None = None
) -> ReferenceSpeedup | None:
    """`reference_speedup` of a record; over part of v0's workloads (`workload_coverage`,
    given v0's, `base`) its aggregate says so: `geomean over 1 of 3 workloads`."""
    found = reference_speedup(_get(record, "performance"))
    part = coverage_text(workload_coverage(record, base)) if base is not None else None
    if found is not None and part is not None:
        found.aggregate = f"{found.aggregate} over {part}"
    return found


def objective_unscored(performance: Any, base_performance: Any) -> bool:
    """Whether `performance` names the objective the base is scored by but has no ratio of it
    to the base's (`objective_ratio` is None): its `performance_score` is not positive and
    finite (0, negative or null: atrex writes the evaluator's value as it comes, session_io.py
    `_record_local_test_result`), or its ratio to the base's overflows a float (a huge score
    over a tiny one). atrex's supervisor takes only a positive finite score as a measurement
    (campaign.py `_positive_finite`), so the record has no score of the objective: it is not
    given one of another kind (the latency ratio) to be ranked against theirs."""
    base = objective_score(base_performance)
    return (
        base is not None
        and _get(performance, "performance_objective") == base[0]
        and objective_ratio(performance, base_performance) is None
    )


def objective_ratio(performance: Any, base_performance: Any) -> float | None:
    """`performance_score` / the base's when both carry the same known objective (higher is
    better), else None: scores of different objectives (a
    workspace upgraded from v0.2, whose v0 records none) are not compared."""
    found, base = objective_score(performance), objective_score(base_performance)
    if found is None or base is None or found[0] != base[0]:
        return None
    return ratio(found[1], base[1])
