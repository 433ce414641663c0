"""Parameters and results of workflow commands shared by the CLI and the daemon."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, model_validator

from kernelscope.protocol._open_model import ClosedModel
from kernelscope.protocol.workspace import CANONICAL_UNIT, MetricKind


class MaskHalfResult(ClosedModel):
    """What `mask-half` chose (or would choose, with `dry_run`)."""

    workspace: str
    seed: int = Field(description="the random seed used; pass it back to repeat the choice")
    candidates: list[str] = Field(description="unmasked versions other than v0 and the best")
    masked: list[str] = Field(description="versions masked (or that would be)")
    best_version: str | None = Field(description="kept unmasked as the current best")
    best_metric: MetricKind | None = Field(description="what 'best' was judged on")
    best_rule: str = Field(description="how the best version was chosen, in words")
    latest_passing_version: str | None = Field(
        default=None,
        description="kept unmasked as the latest successful iteration (the record of the kernel.py "
        "a restarted agent starts from, when it is not the best)",
    )
    pitfall_recorded_in: str | None = Field(
        default=None, description="version whose pitfalls_and_fixes got the restart entry"
    )
    next_version: str
    dry_run: bool = False
    skipped_corrupt: list[str] = Field(default_factory=list)


NOT_EVALUATED = "not evaluated"


class StopConditionStatus(ClosedModel):
    """One README stop condition against this iteration's measurement: `text` as the README
    writes it (`bandwidth >= 4.32TB/s`), `target` and `measured` in the canonical unit of its
    kind, which `unit` names (4320, GB/s). `met` is true or false where the condition was
    evaluated, and null where it was not (an interpreter run, a failed gate, no bytes_moved or
    flops to compute the metric), with the reason in `note`: unknown is neither met nor not."""

    text: str
    kind: MetricKind
    target: float = Field(description="in the canonical unit (GB/s, TFLOPS, us)")
    unit: str = Field(description="the unit of target and measured: CANONICAL_UNIT[kind]")
    measured: float | None = None
    met: bool | None = Field(
        default=None, description="null: not evaluated (the reason in note), neither met nor not met"
    )
    note: str | None = Field(default=None, description="why the condition was not evaluated")

    @model_validator(mode="before")
    @classmethod
    def _canonical_unit(cls, data: Any) -> Any:
        """The unit is that of the value, the kind's canonical one. Records written before it
        was (kernelscope iterate until this fix) hold the README's unit beside the canonical
        value (`"target": 4320.0, "unit": "TB/s"`): read as the value's unit, GB/s. Records
        written before "not evaluated" was a state of its own say `"met": false` with nothing
        measured (`"note": "not evaluated: ..."`, or a failed gate): read as not evaluated."""
        if isinstance(data, dict) and data.get("kind") in CANONICAL_UNIT:
            data = {**data, "unit": CANONICAL_UNIT[data["kind"]]}
        if isinstance(data, dict) and data.get("met") is False and data.get("measured") is None:
            note = str(data.get("note") or "").removeprefix(f"{NOT_EVALUATED}: ") or None
            data = {**data, "met": None, "note": note}
        return data

    def state(self) -> str:
        """`met`, `not met`, or `not evaluated (why)`: how every surface says it."""
        if self.met is None:
            return NOT_EVALUATED + (f" ({self.note})" if self.note else "")
        return "met" if self.met else "not met"


def recorded_stop_conditions(value: Any) -> list[StopConditionStatus]:
    """A record's `kernelscope.stop_conditions` read as statuses (records of any age: see the
    validator; keys a newer writer added are ignored); an entry that is not one is left out."""
    statuses = []
    for item in value if isinstance(value, list) else []:
        known = (
            {k: v for k, v in item.items() if k in StopConditionStatus.model_fields}
            if isinstance(item, dict)
            else item
        )
        try:
            statuses.append(StopConditionStatus.model_validate(known))
        except ValidationError:
            continue
    return statuses


def stop_conditions_met(statuses: list[StopConditionStatus], unreadable: bool = False) -> bool | None:
    """All of them met (true), one not met (false; or none stated), or none not met and one
    not evaluated, or not readable (null): unknown is no reason to stop, and no evidence that
    the target is missed either."""
    if any(s.met is False for s in statuses) or not (statuses or unreadable):
        return False
    return True if not unreadable and all(s.met for s in statuses) else None


class IterationResult(ClosedModel):
    """What `kernelscope iterate` did: the version written, the verdict, the commit."""

    workspace: str
    version: str
    parent_version: str | None = None
    passed: bool
    verdict: str = Field(
        default="",
        description="`kernelscope bench`'s word for the run: PASS, FAIL (wrong_result), NOT RUN (setup)",
    )
    mode: str
    score: float | None = Field(
        default=None, description="geomean speedup vs v0's kernel (None: not timed vs it)"
    )
    speedup_vs_reference: float | None = Field(
        default=None,
        description="geometric-mean speedup vs the reference, when that is what it was timed against "
        "(no v0 kernel.py to be found, or a gate's evaluator timing against its own reference)",
    )
    score_vs_parent: float | None = None
    latency_us: float | None = None
    memory_path: str
    experiment_id: str | None = None
    commit: str | None = Field(default=None, description="the commit holding kernel.py and the record")
    failed_ref: str | None = Field(default=None, description="side ref keeping a failed kernel")
    reverted: bool = False
    stop_conditions: list[StopConditionStatus] = Field(default_factory=list)
    stop_conditions_met: bool | None = Field(
        default=False,
        description="true: every stop condition met; false: one not met, or none stated; null: "
        "none not met and one not evaluated (an interpreter run, a failed gate)",
    )
    exit_status: int = Field(
        description="`kernelscope bench`'s exit status for the run (protocol/bench.py exit_status), "
        "the CLI's: 0 passed, 3 failed, 4 stopped by a resource cap (a run that judged nothing "
        "records nothing and answers an error instead)"
    )
    failure: str | None = None
    messages: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(
        default_factory=list,
        description="the README's warnings (a stop condition it cannot check, none stated), "
        "as the iteration read it: the CLI says them before it measures",
    )


class RestartReport(ClosedModel):
    """The partial restart, phase by phase, with every hard-constraint violation named."""

    workspace: str
    mask: MaskHalfResult
    mask_commit: str | None = Field(
        default=None, description="the commit of the mask's files (none outside git or with nothing masked)"
    )
    next_version: str
    brief_path: str
    agent_command: list[str]
    agent_exit_code: int | None = None
    agent_timed_out: bool = False
    agent_cancelled: bool = False
    violations: list[str] = Field(default_factory=list)
    completed: bool = Field(description="every completion criterion holds and nothing was violated")
    # The seed's return fields.
    latest_memory_path: str | None = None
    performance_summary: str | None = None
    action_taken: str | None = None
    gate_result: str | None = None
    commit_hash: str | None = None
    stop_conditions_met: bool | None = None
