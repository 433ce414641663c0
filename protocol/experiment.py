"""The experiment record: one attempt at optimizing a kernel (seed: kernel-exp-history).

Field names and defaults follow the public original (`KernelExperiment` in the Apex
kernel-exp-history skill) so code written against it keeps working: build it with keywords,
`id` defaults to 16 hex digits, `pid` to "", `created_at` to ISO 8601 ending in Z, and
`to_dict()`/`from_dict()` exist. kernelscope adds what the editor needs to place a record
(`workspace`, `kernels`, `memory_version`, `metrics`, `tags`) and validates what the original
took on trust: a one-line summary of at most 80 characters, a finite score that is > 0
unless the run is buggy, a known status, no unknown fields.
"""

from __future__ import annotations

import math
import secrets
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from kernelscope.protocol._open_model import ClosedModel
from kernelscope.protocol.record_rules import canonical_version

ExperimentStatus = Literal["new", "running", "done", "failed", "timeout"]
FailureCategory = Literal["buggy", "regressive", "slight_regression", "marginal", "improvement", "unscored"]

SUMMARY_MAX_CHARS = 80
# Failure categories from the seed: regressive below 0.98, marginal within 0.99-1.01.
REGRESSIVE_BELOW = 0.98
MARGINAL_LOW, MARGINAL_HIGH = 0.99, 1.01

# The key fields `top_experiments` returns, as in the original.
TOP_KEYS = (
    "base_commit",
    "change_summary",
    "detailed_description",
    "dtype_sig",
    "env",
    "id",
    "operator_sig",
    "profiling_info",
    "raw_result",
    "score",
)


def new_experiment_id() -> str:
    """A 64-bit random id as 16 hex digits (the original's format)."""
    return secrets.token_hex(8)


def utc_now_z() -> str:
    """Now in ISO 8601, UTC, ending in Z (the original's format)."""
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class KernelExperiment(BaseModel):
    """One kernel optimization attempt, failures included."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # The seed's fields.
    score: float | None = Field(
        default=None, description="speedup vs baseline (1.0 = none); finite, > 0 unless buggy"
    )
    raw_result: str = ""
    dtype_sig: str = Field(default="", max_length=200)
    env: str = Field(default="", max_length=2000)
    is_buggy: bool = False
    error_message: str = ""
    change_summary: str = Field(default="", description="one line, at most 80 characters")
    detailed_description: str = ""
    code_change: str = Field(default="", description="a diff")
    base_commit: str = Field(default="", max_length=200)
    operator_sig: str = Field(default="", max_length=1000)
    profiling_info: str = ""
    status: ExperimentStatus = "new"
    id: str = Field(default_factory=new_experiment_id, min_length=1, max_length=64)
    pid: str = Field(default="", description="parent experiment id ('' for none)", max_length=64)
    created_at: str = Field(default_factory=utc_now_z)
    # What the editor needs to place the record.
    workspace: str = Field(default="", max_length=1024)
    kernels: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        default_factory=list, description="kernel function names"
    )
    memory_version: str | None = Field(default=None, max_length=32)
    metrics: dict[str, Any] = Field(default_factory=dict, description="structured per-config results")
    tags: list[str] = Field(default_factory=list)

    @field_validator("change_summary")
    @classmethod
    def _one_short_line(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("change_summary must be one line")
        if len(value) > SUMMARY_MAX_CHARS:
            raise ValueError(
                f"change_summary is {len(value)} characters; at most {SUMMARY_MAX_CHARS} allowed "
                "(put details in detailed_description)"
            )
        return value

    @field_validator("memory_version")
    @classmethod
    def _one_spelling_per_version(cls, value: str | None) -> str | None:
        """`V2` and `2` stored as `v2` (the masked filter and the lens match it by that text);
        another value is kept as it is: rows written before are read as they were, and the
        CLI refuses it before writing (memory.core.normalize_version)."""
        if value is None:
            return None
        try:
            return canonical_version(value)
        except ValueError:
            return value

    @field_validator("id", "pid")
    @classmethod
    def _printable_id(cls, value: str) -> str:
        if any(ch.isspace() for ch in value) or any(ord(ch) < 32 for ch in value):
            raise ValueError("ids must not contain whitespace or control characters")
        return value

    @field_validator("created_at")
    @classmethod
    def _iso_timestamp(cls, value: str) -> str:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"created_at {value!r} is not an ISO 8601 timestamp") from None
        if parsed.tzinfo is not None and not value.endswith("Z"):
            # In UTC ending in Z, like every timestamp kernelscope writes: the store orders
            # "latest" by this text, and 12:00+05:00 (07:00 UTC) must sort before 10:00Z.
            return parsed.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        return value

    @model_validator(mode="after")
    def _score_is_meaningful(self) -> KernelExperiment:
        score = self.score
        if score is None:
            return self
        if not math.isfinite(score):
            raise ValueError(f"score must be finite, got {score}")
        if score <= 0 and not self.is_buggy:
            raise ValueError(f"score must be > 0 unless the run is buggy (is_buggy=True), got {score}")
        if score < 0:
            raise ValueError(f"score must not be negative, got {score}")
        return self

    # -- the original's helpers ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelExperiment:
        return cls.model_validate(data)

    @property
    def category(self) -> FailureCategory:
        return failure_category(self.score, self.is_buggy)


def failure_category(score: float | None, is_buggy: bool) -> FailureCategory:
    """The seed's categories: buggy, regressive (< 0.98), marginal (0.99-1.01), improvement.

    Scores in [0.98, 0.99) are `slight_regression`; records with no score are `unscored`.
    """
    if is_buggy:
        return "buggy"
    if score is None:
        return "unscored"
    if score < REGRESSIVE_BELOW:
        return "regressive"
    if score < MARGINAL_LOW:
        return "slight_regression"
    if score <= MARGINAL_HIGH:
        return "marginal"
    return "improvement"


class KernelSummary(ClosedModel):
    """Per-kernel digest for code lenses: best, latest, run and failure counts. Read through
    the workspace's masks (daemon/engine/workspace/masked.py), the runs of masked memory
    versions are in none of these figures but in `masked_runs` alone."""

    kernel: str
    runs: int
    failures: int
    masked_runs: int = Field(
        default=0, description="runs of the workspace's masked memory versions, left out of the other figures"
    )
    best_id: str | None = None
    best_score: float | None = None
    best_version: str | None = None
    latest_id: str | None = None
    latest_score: float | None = None
    latest_version: str | None = None
    latest_status: ExperimentStatus | None = None


class Lineage(ClosedModel):
    """An experiment's ancestors (parent first) and descendants (breadth first)."""

    experiment: KernelExperiment
    ancestors: list[KernelExperiment] = Field(default_factory=list)
    descendants: list[KernelExperiment] = Field(default_factory=list)
    missing_parent: str | None = Field(default=None, description="a pid that points to no stored experiment")
