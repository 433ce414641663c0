"""The daemon's command parameters, results and settings: the contract editor clients code
against (`kernelscope schema` prints their JSON Schema). Every command takes one object."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelscope.protocol.bench import BenchResult
from kernelscope.protocol.commands import IterationResult, MaskHalfResult, RestartReport
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.history import VersionComparison
from kernelscope.protocol.settings import Settings
from kernelscope.protocol.vocabulary import COMMANDS, JOB_KINDS, JobKind


class _Params(BaseModel):
    """Unknown fields are refused, so a typo in a client is an InvalidParams, not a no-op."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class WorkspaceParams(_Params):
    workspace: str = Field(description="the workspace folder (path or file:// URI)")


class WritesAfterAsking(WorkspaceParams):
    """A command that masks memory (and may launch an agent): with `confirm`, the server asks
    the person first (CONFIRMS, below, names these commands; commands.json tells the clients)."""

    confirm: bool = Field(
        default=False,
        description="ask the user first (window/showMessageRequest, the server's question: what is "
        "masked, what is kept and why) and write nothing unless they agree; the lens and the editors' "
        "palette commands pass it, scripts that already asked leave it out",
    )


class MaskHalfParams(WritesAfterAsking):
    dry_run: bool = Field(default=False, alias="dryRun")
    seed: int | None = None
    force: bool = Field(
        default=False,
        description="skip unreadable memory files, and write even when an orchestrator drives the workspace",
    )


class UnmaskParams(WorkspaceParams):
    versions: list[str] = Field(min_length=1)
    force: bool = Field(default=False, description="write even when an orchestrator drives the workspace")


class RecordExperimentParams(WorkspaceParams):
    change_summary: str = Field(alias="changeSummary")
    score: float | None = None
    detailed_description: str = Field(default="", alias="detailedDescription")
    kernels: list[str] = Field(default_factory=list)
    memory_version: str | None = Field(default=None, alias="memoryVersion")
    is_buggy: bool = Field(default=False, alias="isBuggy")
    error_message: str = Field(default="", alias="errorMessage")
    status: Literal["new", "running", "done", "failed", "timeout"] = "done"
    pid: str = ""
    tags: list[str] = Field(default_factory=list)
    # the rest of the seed's fields, as `kernelscope exp record` takes them (lengths: the store's
    # KernelExperiment checks them, with the field named)
    code_change: str = Field(default="", alias="codeChange")
    raw_result: str = Field(default="", alias="rawResult")
    profiling_info: str = Field(default="", alias="profilingInfo")
    operator_sig: str = Field(default="", alias="operatorSig")
    dtype_sig: str = Field(default="", alias="dtypeSig")
    env: str = ""
    base_commit: str = Field(default="", alias="baseCommit")


class RunIterationParams(WorkspaceParams):
    action_category: str | None = Field(default=None, alias="actionCategory")
    action_description: str | None = Field(default=None, alias="actionDescription")
    revert_on_fail: bool = Field(default=False, alias="revertOnFail")
    force: bool = Field(default=False, description="write even when an orchestrator drives the workspace")


class RestartParams(WritesAfterAsking):
    seed: int | None = None
    timeout_s: float = Field(default=3600.0, gt=0, alias="timeoutS")
    force: bool = Field(default=False, description="write even when an orchestrator drives the workspace")


class BenchmarkParams(WorkspaceParams):
    candidate: str | None = None


class ShowHistoryParams(WorkspaceParams):
    kernel: str | None = None


class TopExperimentsParams(_Params):
    workspace: str | None = None
    max_results: int = Field(default=20, ge=0, le=1000, alias="maxResults")
    operator_sig: str | None = Field(default=None, alias="operatorSig")
    kernel: str | None = None
    include_buggy: bool = Field(default=False, alias="includeBuggy")
    include_interpreter: bool = Field(
        default=False,
        alias="includeInterpreter",
        description="also rank Triton-interpreter (CPU) runs, whose timings are no GPU figures",
    )
    include_masked: bool = Field(
        default=False,
        alias="includeMasked",
        description="also rank the experiments of masked memory versions (each workspace's own masks)",
    )


class CompareParams(WorkspaceParams):
    version_a: str = Field(alias="versionA", description="e.g. v2")
    version_b: str = Field(alias="versionB", description="e.g. v4")


class CancelParams(_Params):
    workspace: str | None = Field(default=None, description="cancel this workspace's job; all when omitted")


class UnmaskResult(BaseModel):
    changed: list[str]


class HistoryEntry(BaseModel):
    version: str | None
    score: float | None
    status: str
    summary: str
    experiment_id: str | None = None
    masked: bool = Field(default=False, description="its memory record is masked (hidden from agents)")
    failed: bool = Field(default=False, description="it failed its gate (or the run failed)")


class HistoryResult(BaseModel):
    workspace: str
    kernel: str | None
    target: str | None = Field(default=None, description="target vs best, as the file lens says")
    entries: list[HistoryEntry]
    markdown: str


class CancelResult(BaseModel):
    cancelled: list[str]


class JobStarted(BaseModel):
    """Long commands return at once; their outcome arrives as `kernelscope/jobFinished` with
    the same `job_id` and `kind`."""

    job_id: str
    workspace: str
    kind: JobKind


class Declined(BaseModel):
    """A command sent with `confirm` whose question the user answered no, or dismissed: nothing
    was written and no job started."""

    workspace: str
    declined: Literal[True] = True
    question: str = Field(description="the question the user was asked")


class JobFinished(BaseModel):
    """`kernelscope/jobFinished`: how a job ended. `background` jobs (save -> re-benchmark)
    speak through lenses and diagnostics; clients do not pop them up."""

    model_config = ConfigDict(populate_by_name=True)

    job_id: str = Field(alias="jobId")
    workspace: str
    kind: JobKind
    background: bool = False
    cancelled: bool = False
    result: dict[str, Any] | None = Field(
        default=None, description="the job's result (see JOB_RESULTS by kind); absent on error"
    )
    error: str | None = None


class WorkspaceEntry(BaseModel):
    """One optimization workspace among the editor's folders (`kernelscope/workspaces`)."""

    workspace: str
    kernel: str = Field(description="its kernel.py")


class WorkspacesResult(BaseModel):
    workspaces: list[WorkspaceEntry]


__all__ = ["COMMAND_MODELS", "JOB_RESULTS", "JobFinished", "Settings", "WorkspacesResult"]

_RESULTS: dict[str, Any] = {
    "kernelscope.maskHalf": MaskHalfResult | Declined,
    "kernelscope.unmask": UnmaskResult,
    "kernelscope.recordExperiment": KernelExperiment,
    "kernelscope.runIteration": JobStarted,
    "kernelscope.restart": JobStarted | Declined,
    "kernelscope.benchmark": JobStarted,
    "kernelscope.showHistory": HistoryResult,
    "kernelscope.topExperiments": list[KernelExperiment],
    "kernelscope.cancel": CancelResult,
    "kernelscope.compare": VersionComparison,
}
# Built from the one vocabulary (protocol/vocabulary.py): a command added there without a
# params model here fails at import, not at run time.
COMMAND_MODELS: dict[str, tuple[type[BaseModel], Any]] = {
    name: (globals()[params], _RESULTS[name]) for name, (params, _method, _kind) in COMMANDS.items()
}
# The commands that ask before they write when sent with `confirm`: those whose params take it
# (commands.json's `confirm`, which the editors' palette commands read).
CONFIRMS: tuple[str, ...] = tuple(
    name for name, (params, _) in COMMAND_MODELS.items() if issubclass(params, WritesAfterAsking)
)
# What `kernelscope/jobFinished` carries in `result` for each job kind.
JOB_RESULTS: dict[str, Any] = {
    "runIteration": IterationResult,
    "restart": RestartReport,
    "benchmark": BenchResult,
}
assert set(JOB_RESULTS) == set(JOB_KINDS)
