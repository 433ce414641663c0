"""Shapes of what kernelscope reads from a workspace: targets, stop conditions, hardware
specs and kernels. These are produced by the workspace reader and sent to editors, so they
are plain data with no behaviour beyond simple derived values."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, computed_field

from kernelscope.protocol._open_model import ClosedModel
from kernelscope.protocol.history import ScoreValue

# `utilization`: the percentage of the hardware's peak a version reached, the larger of its
# record's TFLOP/s and bandwidth figures (atrex's supervisor stops on it: `--target-util`); a stop
# condition, never what `best` or a score is measured by (ReadmeInfo.primary_kind).
MetricKind = Literal["bandwidth", "tflops", "latency", "utilization"]
Comparator = Literal[">=", ">", "<=", "<"]

# Canonical units stop conditions are normalised to, so they compare with measurements.
CANONICAL_UNIT: dict[str, str] = {
    "bandwidth": "GB/s",
    "tflops": "TFLOPS",
    "latency": "us",
    "utilization": "%",
}


class TargetInfo(ClosedModel):
    """The `## Target` section: what is being optimized and where."""

    platform: str | None = None
    arch: str | None = None
    framework: str | None = None
    dtype: str | None = None
    kernel_type: str | None = None
    other: dict[str, str] = Field(default_factory=dict, description="other `key: value` bullets")


class StopCondition(ClosedModel):
    """One target from `## Stop Conditions`, e.g. `bandwidth >= 3.87TB/s`.

    `value`/`unit` are as written; `normalized_value` is in `CANONICAL_UNIT[kind]`
    (GB/s, TFLOPS, us, %) so it can be compared with a measurement directly.
    """

    kind: MetricKind
    comparator: Comparator
    value: float
    unit: str
    normalized_value: float
    dtype: str | None = None
    label: str | None = None
    text: str = ""
    line: int | None = Field(default=None, description="1-based line in README.md")
    target_text: str = Field(
        default="",
        description="the comparison as the README states its target, `>= 4.32TB/s`: as written, or what "
        "its arithmetic comes to (`4.8TB/s * 90%`); what the lens names it by",
    )

    def is_met(self, measured: float | None) -> bool:
        """Whether a measurement (in the canonical unit) satisfies this condition."""
        if measured is None:
            return False
        target = self.normalized_value
        return {
            ">=": measured >= target,
            ">": measured > target,
            "<=": measured <= target,
            "<": measured < target,
        }[self.comparator]


class CorrectnessThreshold(ClosedModel):
    """The correctness threshold, e.g. `rel_err < 0.01`."""

    metric: str = "rel_err"
    comparator: Comparator = "<"
    value: float
    line: int | None = None


class HardwareSpec(ClosedModel):
    """A cited hardware figure: `<metric>: <value> <unit> <- <source>` or `UNKNOWN`."""

    metric: str
    value: float | None = None
    unit: str | None = None
    source: str | None = None
    known: bool = True
    line: int | None = None


ReadmeWarningCode = Literal[
    "readme:stop-condition-skipped",  # a comparison kernelscope cannot check (a decimal comma, no unit)
    "readme:stop-condition-placeholder",  # a template's `<value>` left in a stop condition
    "readme:target-placeholder",  # a template's placeholder left in a target bullet
    "readme:no-measurable-stop-condition",  # a goal, or stop conditions in words, and no threshold
    "readme:no-stop-conditions",
]


class ReadmeWarning(ClosedModel):
    """One thing the README parser could not use, with the line it is about (the editor shows
    it there: lsp/features/readme.py) and its kind."""

    code: ReadmeWarningCode
    message: str = Field(description="what is wrong and what to write instead, without the line")
    line: int | None = Field(
        default=None, description="1-based line in README.md; None: the README as a whole"
    )

    @property
    def text(self) -> str:
        """The message as the CLI says it: `README line N: ...` where it names a line."""
        return f"README line {self.line}: {self.message}" if self.line is not None else self.message


class ReadmeInfo(ClosedModel):
    """Everything kernelscope understands in a workspace README."""

    path: str
    target: TargetInfo = Field(default_factory=TargetInfo)
    correctness_threshold: CorrectnessThreshold | None = None
    hardware_specs: list[HardwareSpec] = Field(default_factory=list)
    stop_conditions: list[StopCondition] = Field(default_factory=list)
    machine_block: bool = Field(
        default=False, description="a ```kernelscope block was found and took precedence"
    )
    bench: dict[str, Any] = Field(
        default_factory=dict,
        description="benchmark settings from the ```kernelscope block: entry_point, reference, "
        "baseline, gate_command, timeout_s",
    )
    targets_digest: str = Field(
        default="", description="sha256 of the target, stop-condition and hardware-spec text"
    )
    goal: str | None = Field(
        default=None, description="the `## Goal` section's first statement (today's atrex READMEs)"
    )
    workload_count: int | None = Field(
        default=None, description="`Workloads (shape set): N ...` in `## Config`"
    )
    stated_stop_conditions: list[str] = Field(
        default_factory=list,
        description="stop conditions stated in words (e.g. `Max iterations stop condition: 20`, "
        "`speedup vs v0 >= 2x`) that name no measurable threshold kernelscope can check",
    )
    unchecked_stop_conditions: list[str] = Field(
        default_factory=list,
        description="stop conditions that compare a number kernelscope cannot read (`bandwidth >= "
        "4,32TB/s`, no unit), each with a warning: unknown, so no answer is ever `met` beside them",
    )
    notes: list[ReadmeWarning] = Field(
        default_factory=list, description="the warnings with their line and kind, as data"
    )
    errors: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def warnings(self) -> list[str]:
        """The warnings as sentences that name their line (`notes`, as the CLI prints them)."""
        return [note.text for note in self.notes]

    @property
    def primary_kind(self) -> MetricKind | None:
        """The kind of the first stop condition on a figure a version is measured by (latency,
        bandwidth, TFLOP/s): what 'best' means for this workspace. A utilization target is no
        such figure (the percentage of a peak the README may not cite, and the larger of two):
        a README whose only condition is one has none, and the one score decides, as for a goal."""
        return next((c.kind for c in self.stop_conditions if c.kind != "utilization"), None)


class SourceError(ClosedModel):
    """A file that could not be parsed, with the position to show in an editor."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None


class KernelInfo(ClosedModel):
    """A Triton kernel function found in kernel.py (by parsing, never importing)."""

    name: str
    decorators: list[str] = Field(description="decorator names as resolved, e.g. triton.jit")
    decorator_line: int = Field(description="1-based line of the first decorator")
    def_line: int = Field(description="1-based line of the `def`")
    name_column: int = Field(description="0-based column of the function name")
    end_line: int
    autotuned: bool = False


class KernelScan(ClosedModel):
    """Result of scanning kernel.py: the kernels, or the syntax error that stopped it."""

    path: str
    kernels: list[KernelInfo] = Field(default_factory=list)
    error: SourceError | None = None


class VersionSummary(ClosedModel):
    """One memory version as listed by `kernelscope memory list`."""

    version: str
    masked: bool | None = Field(description="null when the file could not be read (see error): unknown")
    gate: str | None = None
    latency_us: float | None = None
    tflops: float | None = None
    bandwidth_gbps: float | None = None
    latency_ratio: float | None = Field(
        default=None,
        description="v0's recorded latency / this version's recorded latency: the records' own "
        "figures, as written, not a score; rank by `score` (a version that ran more workloads than "
        "v0 is scored over v0's, and its score differs from this ratio). Where one states the "
        "geomean over its workloads and the other its slowest workload's (records from before "
        "and after iterate wrote the geomean), the ratio of their geomeans over the workloads "
        "they share, else null (latency_ratio_note says why)",
    )
    latency_ratio_note: str | None = Field(
        default=None, description="why latency_ratio is null though both versions have a latency"
    )
    score: ScoreValue | None = Field(
        default=None, description="the one score vs v0 every surface shows (kind says what it is)"
    )
    action: str | None = None
    path: str
    error: str | None = Field(default=None, description="why the file could not be read")
    outcome: str | None = Field(
        default=None, description="an episode outcome that promoted nothing: pivot, blocked, rejected..."
    )
    carried_from: str | None = Field(
        default=None, description="its performance numbers are this version's, carried forward (not measured)"
    )
    speedup_vs_reference: float | None = Field(
        default=None,
        description="the speedup over the problem's reference: performance.performance_score under "
        "atrex v0.3's shape_speedup_arithmetic_mean objective, else performance.speedup_vs_ref_geomean",
    )
    reference_aggregate: str | None = Field(
        default=None,
        description="how speedup_vs_reference combines the shapes: 'mean over shapes' or 'geomean'",
    )
    coverage: str | None = Field(
        default=None,
        description="'1 of 3 workloads' when the record's figures cover only part of v0's "
        "workloads (SOL's gate records a failed version's geomean over the workloads that "
        "passed): then no score; \"scored over v0's 3 of its 4 workloads\" when it ran v0's "
        "workloads and more: its latency ratio is over v0's",
    )
    experiments: int | None = Field(default=None, description="experience.experiments recorded by the agent")
    open_directions: int | None = None


# A kind's name (protocol/kinds.py holds the kinds and the rule that picks one): the built-in
# ones are "sol-execbench", "atrex-bench", "kernelbench", "native" and "atrex-v0.1".
WorkspaceKind = str


class TargetSource(ClosedModel):
    """Where one target or stop condition was stated."""

    text: str
    source: str = Field(description="README.md line N, config.json, definition.json, the machine block...")


class Supervisor(ClosedModel):
    """The orchestrator that drives a workspace: kernelscope only observes it by default."""

    name: str = Field(description="e.g. 'atrex long-horizon supervisor'")
    evidence: list[str] = Field(
        description="the files that show it (.atrex_long_horizon/, memory/live.json...)"
    )
    running: bool = Field(default=False, description="an episode is in flight now")


class WorkspaceProfile(ClosedModel):
    """What kind of workspace this is and what it is optimizing for, from the files present."""

    kind: WorkspaceKind
    harness: str = Field(description="how `kernelscope bench` measures it (the contract it uses)")
    target_platform: str | None = None
    framework: str | None = None
    dtype: str | None = Field(
        default=None,
        description="the README's dtype, else the problem's own files': Atrex-Bench metadata.json "
        "'dtype', SOL-ExecBench definition.json inputs' (floating) dtypes",
    )
    goal: str | None = None
    workload_count: int | None = None
    workload_count_note: str | None = Field(
        default=None, description="why workload_count is null where workloads exist (private, unreadable)"
    )
    stop_conditions: list[TargetSource] = Field(default_factory=list)
    targets_digest: str = Field(description="sha256 over every stated target (never of nothing)")
    digest_sources: list[str] = Field(description="what the digest covers (README sections, files)")
    supervisor: Supervisor | None = None


class WorkspaceSummary(ClosedModel):
    """A workspace at a glance: where its files are, its targets, kernels and memory."""

    root: str
    kind: WorkspaceKind = "native"
    profile: WorkspaceProfile | None = None
    readme_path: str | None = None
    kernel_path: str | None = None
    memory_dir: str | None = None
    git_root: str | None = None
    readme: ReadmeInfo | None = None
    kernels: KernelScan | None = None
    versions: list[VersionSummary] = Field(default_factory=list)
    next_version: str = "v0"
    masked_count: int = Field(default=0, description="versions whose record says masked")
    unreadable_count: int = Field(
        default=0, description="versions whose record cannot be read: masked or not is unknown"
    )
    warnings: list[str] = Field(default_factory=list)
    store: str | None = Field(default=None, description="the experiment store in use (no password)")
    imported: dict[str, int] = Field(
        default_factory=dict,
        description="experiments of this workspace imported from the stores they were in",
    )
