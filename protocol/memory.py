"""Shapes of the per-iteration memory records (`memory/v<N>.json`).

The fields are the ones seen in real optimization workspaces (the atrex-style
gpu-kernel-optimizer writes them through its `memory_manager.py`). Everything but
`version` is optional, unknown keys are kept, and numbers are typed loosely
(`int | float | str`) because agents write what they write: a record with
`"latency_us": "12.5"` must still load and round-trip unchanged. Use `as_float` when a
number is needed.
"""

from __future__ import annotations

from typing import Any, Union

from pydantic import Field, field_validator

from kernelscope.protocol import record_rules
from kernelscope.protocol._open_model import OpenRecord

# the rules' home is record_rules.py; re-exported here for the models' users
from kernelscope.protocol.record_rules import as_float as as_float
from kernelscope.protocol.record_rules import format_version as format_version
from kernelscope.protocol.record_rules import parse_version as parse_version

# A loosely typed scalar: kept exactly as written (smart union keeps ints as ints).
Scalar = Union[bool, int, float, str, None]  # noqa: UP007 - pydantic needs the runtime Union


class ComparisonWithPrevious(OpenRecord):
    """Deltas against the previous iteration, as the optimizer records them."""

    latency_delta: Scalar = None
    tflops_delta: Scalar = None
    bandwidth_delta: Scalar = None


class Performance(OpenRecord):
    """Measured performance of one iteration."""

    latency_us: Scalar = None
    tflops: Scalar = None
    bandwidth_gbps: Scalar = None
    tflops_peak_utilization_pct: Scalar = None
    bandwidth_peak_utilization_pct: Scalar = None
    comparison_with_previous: ComparisonWithPrevious | Any = None
    latency_us_by_shape: Any = None


class Optimization(OpenRecord):
    """What the iteration changed and why."""

    action_category: Scalar = None
    action_description: Scalar = None
    expected_impact: Scalar = None
    risks_and_rollback: Scalar = None


class ProfileEvidence(OpenRecord):
    """Profiler evidence behind the iteration's decision."""

    tool_used: Scalar = None
    evidence_summary: Scalar = None
    bottleneck_type: Scalar = None
    evidence_chain: Any = None


class Correctness(OpenRecord):
    """Correctness against the reference: `status` is PASS, FAIL or TIMEOUT_FAIL."""

    rel_err: Scalar = None
    status: Scalar = None


class QualityGate(OpenRecord):
    """The quality gate verdict (`result` PASS/FAIL) and why it failed."""

    result: Scalar = None
    failure_reason: Scalar = None


class PitfallAndFix(OpenRecord):
    """One lesson: what went wrong, why, and what fixed it."""

    error_type: Scalar = None
    error_message: Scalar = None
    root_cause: Scalar = None
    fix_applied: Scalar = None
    lesson: Scalar = None


class MemoryRecord(OpenRecord):
    """One `memory/v<N>.json` record.

    Only `version` is required. Sub-objects are typed where their shape is known and
    fall back to plain JSON when a tool wrote something else (a string instead of an
    object, a number as a string), so no real record is rejected for its style and none
    is altered by a load/dump round trip.
    """

    version: str = Field(description="'v<N>'; v0 is the baseline")
    masked: Any = None
    timestamp: Scalar = None
    performance: Performance | Any = None
    optimization: Optimization | Any = None
    profile_evidence: ProfileEvidence | Any = None
    correctness: Correctness | Any = None
    isa_metric_progress: Any = None
    search_log: Any = None
    pitfalls_and_fixes: list[PitfallAndFix | Any] | Any = None
    references: Any = None
    quality_gate: QualityGate | Any = None
    open_directions: Any = None
    git_commit_hash: Scalar = None

    @field_validator("version")
    @classmethod
    def _version_is_v_n(cls, value: str) -> str:
        parse_version(value)
        return value

    @property
    def number(self) -> int:
        """The numeric version (v12 -> 12)."""
        return parse_version(self.version)

    @property
    def is_masked(self) -> bool:
        """`masked: true` (or the string "true", as some tools write it)."""
        return record_rules.masked(self.masked)

    @property
    def gate_result(self) -> str | None:
        """`quality_gate.result` upper-cased, else `correctness.status`, else None."""
        return record_rules.gate_result(self.quality_gate, self.correctness)

    @property
    def gate_passed(self) -> bool:
        return self.gate_result == "PASS"

    def metric(self, name: str) -> float | None:
        """A performance metric as a float (`latency_us`, `tflops`, `bandwidth_gbps`...)."""
        return as_float(record_rules.section_get(self.performance, name))


def memory_schema_template(version: str, timestamp: str) -> dict[str, Any]:
    """The empty record `memory create` writes: the same keys as the seed's template."""
    parse_version(version)
    return {
        "version": version,
        "masked": False,
        "timestamp": timestamp,
        "performance": {
            "latency_us": None,
            "tflops": None,
            "bandwidth_gbps": None,
            "tflops_peak_utilization_pct": None,
            "bandwidth_peak_utilization_pct": None,
            "comparison_with_previous": {
                "latency_delta": None,
                "tflops_delta": None,
                "bandwidth_delta": None,
            },
            "latency_us_by_shape": {},
        },
        "optimization": {
            "action_category": None,
            "action_description": None,
            "expected_impact": None,
            "risks_and_rollback": None,
        },
        "profile_evidence": {
            "tool_used": None,
            "evidence_summary": None,
            "bottleneck_type": None,
            "evidence_chain": None,
        },
        "correctness": {"rel_err": None, "status": None},
        "isa_metric_progress": [],
        "search_log": [],
        "pitfalls_and_fixes": [],
        "references": [],
        "quality_gate": {"result": None, "failure_reason": None},
        "open_directions": [],
        "git_commit_hash": None,
    }
