"""Parameters and results of workflow commands shared by the CLI and the daemon."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kernelscope.protocol.workspace import MetricKind


class MaskHalfResult(BaseModel):
    """What `mask-half` chose (or would choose, with `dry_run`)."""

    model_config = ConfigDict(extra="forbid")

    workspace: str
    seed: int = Field(description="the random seed used; pass it back to repeat the choice")
    candidates: list[str] = Field(description="unmasked versions other than v0 and the best")
    masked: list[str] = Field(description="versions masked (or that would be)")
    best_version: str | None = Field(description="kept unmasked as the current best")
    best_metric: MetricKind | None = Field(description="what 'best' was judged on")
    best_rule: str = Field(description="how the best version was chosen, in words")
    pitfall_recorded_in: str | None = Field(
        default=None, description="version whose pitfalls_and_fixes got the restart entry"
    )
    next_version: str
    dry_run: bool = False
    skipped_corrupt: list[str] = Field(default_factory=list)
