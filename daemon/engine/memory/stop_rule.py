"""When a version meets a README stop condition: the one rule `kernelscope iterate` records its
answer by (the record's `kernelscope.stop_conditions`) and the file lens states it by, for
kernelscope's records and other tools' alike (atrex's records carry no statuses).

A condition is judged on the figure the version's record states for the target's metric
(`performance.latency_us`, `bandwidth_gbps` or `tflops`: record_rules.record_figure), the
version's one number over its workloads. atrex states one number per version, `latency_us` the
geomean over the workloads in SOL-ExecBench and Atrex-Bench workspaces
(reference/test_kernel.py, orchestrator/session_io.py, with `latency_us_geomean` beside it), and
its supervisor stops on `--target-util` (written into a native Atrex-Bench README as `Target
utilization stop condition: 90%`) by the larger of the record's two `*_peak_utilization_pct`
(orchestrator/workspace_state.py `peak_util`): a utilization target is judged on that larger
figure here too. `kernelscope iterate` writes the same latency (and both percentages, where the
README cites the peaks): the geomean where the workspace's objective is (protocol/kinds.py
`latency_geomean`), else its slowest configuration's, the largest workload
(iterate.headline_performance), so records of either writer state one figure. Never the best of
the workloads: a small workload's 5 us is no sign that a kernel whose largest takes 20 us meets
`latency <= 10 us`, and iterate said `met` of it where the lens, reading the record, said 50%.

Only a measurement judges: a version whose gate passed, measured on the GPU (a record without
kernelscope's mode is another tool's GPU figure), by numbers of its own (not carried from an
earlier version). Of any other the condition is not evaluated (`met: None`, the reason in
`note`): neither met nor missed. Whether a version is shown at all (masked) is its surface's
matter, not this rule's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.core import kernelscope_block
from kernelscope.protocol.commands import StopConditionStatus, stop_conditions_met
from kernelscope.protocol.record_rules import figure_fields, gate_result, record_figure, section_get
from kernelscope.protocol.stats import NOT_GPU_FIGURES
from kernelscope.protocol.workspace import CANONICAL_UNIT, ReadmeInfo, StopCondition

GATE_FAILED = "the gate failed: a wrong kernel's timings are no measurement"


def no_figure_note(condition: StopCondition) -> str:
    """Why a passing GPU version's record judges no condition of this kind: it states no figure."""
    return f"no {figure_fields(condition.kind)} recorded"


def condition_status(
    condition: StopCondition, record: Any, missing: str | None = None
) -> StopConditionStatus:
    """`condition` against the figure `record` (a memory record, raw dict or model) states for
    its metric. `missing`: the reason given where a measurement states no such figure (iterate
    names the reference function that would give it), else `no_figure_note`."""
    status = StopConditionStatus(
        text=condition.text,
        kind=condition.kind,
        target=condition.normalized_value,
        unit=CANONICAL_UNIT[condition.kind],
    )
    outcome = atrex_fields.record_outcome(record)
    figure = record_figure(record, condition.kind)
    if kernelscope_block(record).get("mode") == "interpreter":
        status.note = NOT_GPU_FIGURES
    elif gate_result(section_get(record, "quality_gate"), section_get(record, "correctness")) != "PASS":
        status.note = GATE_FAILED
    elif outcome.carried_from:
        status.note = f"numbers carried from {outcome.carried_from}, not measured"
    elif not outcome.measured:
        status.note = "no measurement of its own"
    elif figure is None or figure <= 0:
        status.note = missing or no_figure_note(condition)
    else:
        status.measured = figure
        status.met = condition.is_met(figure)
    return status


def readme_verdict(
    readme: ReadmeInfo | None, record: Any, missing: Callable[[str], str] | None = None
) -> tuple[list[StopConditionStatus], bool | None]:
    """Each of the README's stop conditions judged on `record` by `condition_status`, and all of
    them together (`stop_conditions_met`): at most null where the README states one kernelscope
    cannot read (`unchecked_stop_conditions`: unknown is never met), false where it states none
    that compares a number.
    What iterate records, and what compare and the restart's report say of any version's
    record, today's README against it, whoever wrote it and whatever it stored when (`missing`:
    a condition's kind -> the reason a measurement gives no figure for it, as there)."""
    if readme is None or not (readme.stop_conditions or readme.unchecked_stop_conditions):
        return [], False
    statuses = [
        condition_status(condition, record, missing(condition.kind) if missing else None)
        for condition in readme.stop_conditions
    ]
    return statuses, stop_conditions_met(statuses, unreadable=bool(readme.unchecked_stop_conditions))


def target_fraction(condition: StopCondition, measured: float) -> float:
    """How far a figure is towards the target, 1.0 at it (above: beyond it), for either direction."""
    if condition.kind == "latency":
        return condition.normalized_value / measured
    return measured / condition.normalized_value
