"""What the history features send to editors: per-line blame, values already tried, the
"already tried" fingerprint verdict, and a comparison of two versions.

Lines and characters are 0-based; characters count code points (kernel files are ASCII in
practice; a client that negotiated UTF-16 positions converts non-ASCII lines itself).
Every number says what it is (`kind`): an in-run speedup and a ratio of recorded latencies
are different measurements and are never shown under the same name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kernelscope.protocol._open_model import ClosedModel

ScoreKind = Literal["speedup", "latency_ratio", "metric_ratio", "latency_change_pct"]
Severity = Literal["warning", "information", "hint"]


class ScoreValue(ClosedModel):
    """One measured number about a version, with what it is and what it is relative to."""

    value: float
    kind: ScoreKind = Field(
        description="speedup: geometric-mean speedup measured in one interleaved run; latency_ratio: "
        "ratio of two recorded latencies (other/this, >1 = faster); metric_ratio: ratio of a "
        "recorded higher-is-better metric (throughput, or atrex's performance_score); "
        "latency_change_pct: relative latency change (negative = faster)"
    )
    versus: str = Field(description="what it is relative to: 'v0', a version, 'reference', 'incumbent'")
    ci: tuple[float, float] | None = Field(default=None, description="95% interval, when measured")
    source: str = Field(default="", description="where the number comes from, e.g. kernelscope.score_vs_v0")

    @property
    def in_one_run(self) -> bool:
        """Both sides were measured in one interleaved run (kernelscope's speedup, atrex's ABBA
        latency change), not taken from two records measured apart."""
        return self.kind in ("speedup", "latency_change_pct")

    def text(self) -> str:
        """`3.20x vs v0 [3.10-3.30]`, `latency ratio 1.16x vs v1`, `latency -13.9% vs incumbent`."""
        if self.kind == "latency_change_pct":
            return f"latency {self.value:+.1f}% vs {self.versus}"
        from kernelscope.protocol.record_rules import format_score

        return format_score(self.value, self.kind, self.ci, self.versus)


class VersionEffect(ClosedModel):
    """A memory version and what it measured, as blame and compare show it."""

    version: str
    commit: str | None = Field(default=None, description="the record's git_commit_hash, resolved")
    masked: bool = False
    gate: str | None = Field(default=None, description="PASS, FAIL, TIMEOUT_FAIL...")
    passed: bool = False
    outcome: str | None = Field(
        default=None, description="an episode outcome that promoted nothing: pivot..."
    )
    carried_from: str | None = Field(default=None, description="its numbers are this version's, not measured")
    measured: bool = Field(
        default=True, description="its performance numbers were measured on its own kernel"
    )
    mode: str | None = Field(default=None, description="gpu or interpreter (kernelscope records)")
    verdict: str | None = Field(default=None, description="faster, slower, no measurable change...")
    score: ScoreValue | None = Field(default=None, description="the version's one score vs v0")
    vs_parent: ScoreValue | None = Field(default=None, description="its measured effect against its parent")
    vs_reference: float | None = Field(
        default=None,
        description="speedup over the reference (atrex: performance_score or speedup_vs_ref_geomean)",
    )
    vs_reference_aggregate: str | None = Field(
        default=None, description="how vs_reference combines the shapes: 'mean over shapes' or 'geomean'"
    )
    latency_us: float | None = None
    latency_coverage: str | None = Field(
        default=None,
        description="a latency over part of v0's workloads says which: '1 of 3 workloads' (a failed "
        "SOL-ExecBench version's geomean over the workloads that passed); \"scored over v0's 3 of "
        "its 4 workloads\" for one that ran v0's and more",
    )
    failure: str | None = Field(default=None, description="why the gate failed: 'wrong_result rel_err 0.67'")
    action: str | None = Field(default=None, description="optimization.action_description (first line)")
    category: str | None = None
    experiment_ids: list[str] = Field(default_factory=list)
    text: str = Field(description="one line: '1.75x vs v2 · 3.20x vs v0 [3.10-3.30], PASS'")


class BlameLine(ClosedModel):
    """One line of the editor's kernel.py and the version that introduced it."""

    line: int = Field(description="0-based line in the buffer")
    origin: Literal["version", "commit", "unsaved", "unknown"] = Field(
        description="version: a recorded version introduced it; commit: a commit with no memory record; "
        "unsaved: not in HEAD's committed kernel.py (unmeasured); unknown: no git history, or a line "
        "older than a shallow clone's history"
    )
    version: str | None = None
    commit: str | None = None
    commit_subject: str | None = None
    effect: VersionEffect | None = None
    tried_in: str | None = Field(
        default=None, description="an unsaved line a failed version also introduced (its version)"
    )
    hint: str = Field(description="'introduced in v3: BLOCK_SIZE 1024 -> 4096, 1.75x vs v2 ..., PASS'")


class TriedValue(ClosedModel):
    """One value used at a spot by earlier versions (or experiments), and how they scored."""

    value: str
    versions: list[str] = Field(
        default_factory=list, description="versions (and experiment labels) that used it"
    )
    passed: int = 0
    failed: int = 0
    best_version: str | None = None
    best_score: ScoreValue | None = None
    current: bool = Field(default=False, description="the buffer has this value now")
    masked_only: bool = Field(default=False, description="only masked versions used it")
    by_config: dict[str, ScoreValue] = Field(
        default_factory=dict, description="per configuration/shape, from the best version's measurements"
    )


class TriedHint(ClosedModel):
    """A meta-parameter in the buffer and the values earlier versions used at that spot."""

    key: str = Field(description="the spot's identity across versions, e.g. launch:add_kernel#0:BLOCK_SIZE")
    label: str = Field(description="BLOCK_SIZE, num_warps, grid...")
    kind: Literal["launch", "grid", "autotune", "constant", "default"]
    kernel: str | None = None
    line: int
    character: int
    end_line: int
    end_character: int
    value: str = Field(description="the value in the buffer")
    values: list[TriedValue] = Field(default_factory=list)
    hint: str = Field(description="'tried: 64 1.00x v0 · 256 3.20x v1 · 1024 12.50x v2'")
    verdict: str = Field(
        default="", description="on the buffer's value: '2048 never tried; 64 -> 1.00x v0, 1024 -> 12.50x v2'"
    )


class FingerprintMatch(ClosedModel):
    """A recorded kernel whose code is the buffer's (identical) or differs from it only in
    meta-parameter literal values (near)."""

    kind: Literal["identical", "near"]
    label: str = Field(description="'v4', 'v1 trial 5 (episode 1)', 'experiment 3f2a…'")
    version: str | None = None
    source: str = Field(
        description="where the kernel was found: commit, failed ref, episode branch, experiment"
    )
    commit: str | None = None
    passed: bool | None = None
    masked: bool = False
    current: bool = Field(default=False, description="the kernel committed at HEAD")
    differences: list[str] = Field(default_factory=list, description="near: 'BLOCK_SIZE 1024 (here 4096)'")
    changed: list[str] = Field(default_factory=list, description="near: the meta-parameters that differ")
    effect: VersionEffect | None = None
    verdict: str


class FingerprintCheck(ClosedModel):
    """The verdict for one kernel.py text."""

    fingerprint: str | None = Field(default=None, description="None when the text does not parse")
    matches: list[FingerprintMatch] = Field(default_factory=list, description="identical first, then near")
    verdict: str | None = Field(
        default=None, description="'identical to v4: FAILED wrong_result rel_err 0.67'"
    )
    severity: Severity | None = None
    error: str | None = Field(default=None, description="why the text could not be fingerprinted")


class ConfigDelta(ClosedModel):
    """One configuration (shape, workload) measured in both versions."""

    config: str
    a_latency_us: float | None = None
    b_latency_us: float | None = None
    latency_ratio: float | None = Field(default=None, description="a latency / b latency (>1: b is faster)")
    a_speedup: ScoreValue | None = Field(default=None, description="in-run speedup vs v0 of a, this config")
    b_speedup: ScoreValue | None = None
    a_passed: bool | None = None
    b_passed: bool | None = None


class VersionComparison(ClosedModel):
    """`kernelscope compare vA vB`: code, numbers per configuration, gates and actions."""

    workspace: str
    a: VersionEffect
    b: VersionEffect
    code_diff: str = Field(description="unified diff of kernel.py from a to b ('' when identical)")
    code_available: bool = True
    code_a: str | None = Field(default=None, description="a's kernel.py (for a client's diff editor)")
    code_b: str | None = Field(default=None, description="b's kernel.py")
    configs: list[ConfigDelta] = Field(default_factory=list)
    score_ratio: ScoreValue | None = Field(
        default=None,
        description="b's score over a's (same kind only), or b's measured effect when a is its parent",
    )
    gate_details: dict[str, list[str]] = Field(default_factory=dict, description="per version: gate facts")
    latency_figure: str | None = Field(
        default=None,
        description="what the latency row compares: 'geomean' or 'slowest' (the workload's) where "
        "both records state that figure, 'geomean over 3 shared workloads' where one states the "
        "geomean and the other its slowest (recomputed from latency_us_by_shape); null: unlike "
        "figures, latency_note says why, and the row shows each record's own",
    )
    latency_a_us: float | None = Field(default=None, description="a's latency as latency_figure")
    latency_b_us: float | None = Field(default=None, description="b's latency as latency_figure")
    latency_note: str | None = None
    messages: list[str] = Field(default_factory=list)
    markdown: str = ""
