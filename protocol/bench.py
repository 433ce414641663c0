"""The benchmark result contract: what `python -m kernelscope.kernels.runner` prints.

Versioned (`schema_version`): clients check it before reading. A run either measured
something (`status` ok or gate_failed) or failed in a classified way (`error.kind`), always
with a message a person can act on and, for crashes, the tail of the child's stderr.
What a result says in one word (`verdict_word`) and as `kernelscope bench`'s exit status is
decided here, once, for the CLI and the editor's probe lens alike.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Literal, get_args

from pydantic import Field

from kernelscope.protocol._open_model import ClosedModel

BENCH_SCHEMA_VERSION = 1
# How the runner names a group of configurations in its messages (the daemon merges the
# results of groups run apart, and recognises these messages to drop them).
GROUP_PREFIX = "configuration group "
# The most a run's --warmup-ms and --rep-ms may ask for (a minute a phase, far past what any
# measurement needs): the GPU timer turns them into call counts, and inf overflowed it.
MAX_TIMING_MS = 60_000.0


def timing_ms(text: str) -> float:
    """The runner's --warmup-ms and --rep-ms (argparse type): finite, 0 to MAX_TIMING_MS;
    `kernelscope bench`'s options take the same range."""
    value = float(text)
    if not (math.isfinite(value) and 0 <= value <= MAX_TIMING_MS):
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_TIMING_MS:g} milliseconds, not {text}")
    return value


BenchMode = Literal["gpu", "interpreter"]
BenchStatus = Literal["ok", "gate_failed", "error", "unsupported"]
ErrorKind = Literal[
    "setup",  # bad workspace, missing files, bad arguments
    "compile",  # kernel.py does not import, or a Triton kernel does not compile
    "exception",  # the kernel raised while running
    "crash",  # the child died on a signal (segfault, abort)
    "timeout",  # the child ran past its wall-clock limit
    "out_of_memory",  # MemoryError / CUDA OOM / killed by the memory cap
    "wrong_result",  # outputs differ from the reference beyond tolerance
    "wrong_layout",  # the right values in another memory layout (strides differ from the reference)
    "no_kernel",  # no Triton launch in a checked or timed call, or the launches do nothing
    "cheat",  # views of inputs, inputs mutated, cached/replayed answers, patched clocks, threads...
    "unsupported",  # e.g. bf16 or multi-config autotune under the CPU interpreter
    "gate_command",  # the workspace's own gate command failed
    "resource_limit",  # too many processes, too much output, a file past the size cap
    "worker",  # a warm benchmark worker died mid-job and the job could not be run again cold
    "wrong_off_distribution",  # right on the problem's own inputs, wrong on a signed heavy-tailed draw
    "static_check",  # the source breaks a static rule (KernelBench's or kernelscope's): nothing ran
    "interpreter_limit",  # failed under the CPU interpreter where its known bf16 faults could explain it
    "interrupted",  # Ctrl-C (SIGINT) stopped the run before it had a verdict: nothing was decided
    "harness_error",  # kernelscope's harness failed before it read the problem's files: a bug
]

# kernels/fault_origin.py's words: an `exception` whose traceback has no frame of the problem's
# files (still the kernel's: the harness cannot tell) says the first; a `harness_error` the
# second. `bench` prints the traceback's last frames under either (`shows_traceback`).
HARNESS_MAY_BE_AT_FAULT = (
    "no frame of the problem's files is in its traceback: kernelscope's harness may be at fault; "
    "if so, please report it with `kernelscope bench --json`'s error.traceback"
)
HARNESS_FAILED = (
    "a bug in kernelscope, no verdict on the kernel: please report it with "
    "`kernelscope bench --json`'s error.traceback"
)


class UpstreamVerdict(ClosedModel):
    """The verdict of the evaluator a workspace is submitted to, beside kernelscope's own, for
    one configuration: where the two rules disagree, both are shown and upstream's decides."""

    evaluator: Literal["sol-execbench"] = "sol-execbench"
    passed: bool
    kernelscope_passed: bool = Field(description="kernelscope's rule: every element within the bound")
    matched_ratio: float = Field(description="elements within max_atol + max_rtol * |ref|, worst output")
    required_matched_ratio: float
    max_error_cap: float | None = None
    allow_negative_inf: bool = False
    note: str | None = Field(default=None, description="why the two verdicts differ, when they do")


class BenchError(ClosedModel):
    """Why a run, or one configuration of it, failed."""

    kind: ErrorKind
    message: str
    config: str | None = None
    traceback: str | None = None
    stderr_tail: str | None = None
    exit_code: int | None = None


class ConfigResult(ClosedModel):
    """One configuration (shape/dtype): correctness and, when it passed, timing."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    passed: bool
    error: BenchError | None = None
    seeds: list[int] = Field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    rel_err: float | None = Field(default=None, description="||out - ref||_2 / ||ref||_2, worst seed")
    tolerance: str | None = Field(default=None, description="the rule applied, e.g. rel_err < 0.01")
    candidate_ms: float | None = Field(default=None, description="median latency")
    baseline_ms: float | None = None
    candidate_samples: int = 0
    baseline_samples: int = 0
    speedup: float | None = Field(default=None, description="baseline_ms / candidate_ms")
    speedup_ci: tuple[float, float] | None = None
    baseline_times_ms: list[float] | None = Field(
        default=None, description="every timing sample; only while merging a run split into groups"
    )
    candidate_times_ms: list[float] | None = None
    parent_ms: float | None = Field(default=None, description="median latency of the parent version")
    speedup_vs_parent: float | None = None
    gbps: float | None = None
    tflops: float | None = None
    bandwidth_fraction: float | None = Field(default=None, description="of the README's peak")
    tflops_fraction: float | None = None
    launches_per_call: int | None = Field(
        default=None, description="Triton kernel launches of the candidate in a checked call"
    )
    timed_launches: list[int] | None = Field(
        default=None, description="[min, max] Triton launches per timed call of the candidate"
    )
    timed_outputs_checked: int | None = Field(
        default=None,
        description="timed calls whose output was verified against the reference (sampled + hidden audit)",
    )
    candidate_kernel_ms: float | None = Field(
        default=None,
        description="GPU: median summed time of the candidate's Triton launches per call (kernel only; "
        "candidate_ms is launch-inclusive)",
    )
    notes: list[str] | None = None
    shrunk_for_interpreter: dict[str, list[int]] | None = Field(
        default=None,
        description="axes the CPU interpreter ran smaller: {axis: [original, used]} (var axes only)",
    )
    upstream: UpstreamVerdict | None = Field(
        default=None, description="SOL-ExecBench's verdict by its own rule (SOL workspaces)"
    )
    second_distribution: str | None = Field(
        default=None,
        description="the signed heavy-tailed input check: passed, skipped (and why) or opted out",
    )

    def shrunk_text(self) -> str | None:
        """`num_rows 8192 -> 8`: the size that ran, when the interpreter ran a smaller one."""
        if not self.shrunk_for_interpreter:
            return None
        return ", ".join(
            f"{axis} {sizes[0]} -> {sizes[1]}" for axis, sizes in self.shrunk_for_interpreter.items()
        )


class GateReport(ClosedModel):
    """What the workspace's own gate command reported about itself.

    Read from the lines it prints: `<prefix> RESULT_JSON=<json>` (atrex's `test_kernel.py`
    prints `[test_kernel] RESULT_JSON={...}` after running the SOL-ExecBench evaluator) or a
    bare JSON object on the last JSON line (atrex v0.3's evaluators add `performance_objective`,
    `performance_score` and `speedup_vs_ref_mean`). Kept whole so a client sees the gate's own
    numbers next to (or, when the harness did not run, instead of) the harness's.
    """

    command: str
    source: str | None = Field(default=None, description="the line's prefix, e.g. 'test_kernel'")
    exit_code: int | None = None
    total: int | None = Field(default=None, description="workloads evaluated")
    passed: int | None = Field(default=None, description="workloads that passed")
    all_pass: bool | None = None
    failures: list[str] = Field(default_factory=list)
    latency_us_by_shape: dict[str, float] = Field(
        default_factory=dict, description="per-workload latency in microseconds, by workload id"
    )
    latency_us_geomean: float | None = None
    latency_us_arith_mean: float | None = None
    speedup_vs_ref_geomean: float | None = Field(
        default=None, description="null under atrex v0.3's mean objective"
    )
    performance_objective: str | None = Field(
        default=None,
        description="what performance_score measures (atrex v0.3: shape_speedup_arithmetic_mean)",
    )
    performance_score: float | None = Field(
        default=None, description="the score by that objective, higher is better"
    )
    speedup_vs_ref_mean: float | None = Field(
        default=None, description="the arithmetic mean of the per-workload speedups over the reference"
    )
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="other keys the gate printed")


class ProblemFinding(ClosedModel):
    """A weakness of the problem itself (kernels/problem_lint.py): a trivial kernel would pass
    it. Found by running the reference only; shown on the problem file's line."""

    rule: str
    message: str
    config: str
    file: str | None = None
    line: int | None = Field(default=None, description="1-based line in `file`")


class BenchResult(ClosedModel):
    """The outcome of benchmarking one candidate kernel against a baseline."""

    schema_version: int = BENCH_SCHEMA_VERSION
    status: BenchStatus
    passed: bool = Field(description="the correctness gate passed for every configuration")
    mode: BenchMode
    workspace: str
    candidate: str
    baseline: str = Field(description="'reference' or the path of the baseline kernel")
    baseline_version: str | None = Field(
        default=None, description="the recorded version the baseline kernel is (a probe: the best version)"
    )
    reference: str | None = Field(
        default=None, description="the problem's reference module (baseline 'reference'), workspace-relative"
    )
    parent: str | None = Field(default=None, description="the parent version's kernel, when timed too")
    entry_point: str
    configs: list[ConfigResult] = Field(default_factory=list)
    score: float | None = Field(default=None, description="geometric-mean speedup over configs")
    score_ci: tuple[float, float] | None = Field(default=None, description="95% bootstrap interval")
    score_vs_parent: float | None = Field(default=None, description="geometric-mean speedup vs the parent")
    noisy: bool = False
    noise_band: tuple[float, float] | None = Field(
        default=None,
        description="95% interval of this run's A/A ratio (the baseline timed against itself): "
        "the smallest change this run can tell apart from noise",
    )
    verdict: Literal["faster", "slower", "no measurable change", "not comparable"] | None = None
    comparable: bool = Field(
        default=True, description="false under the CPU interpreter: the score must not rank candidates"
    )
    problem_lint: list[ProblemFinding] = Field(
        default_factory=list, description="what a trivial kernel would get away with on this problem"
    )
    suspicious: str | None = Field(
        default=None,
        description="a speedup over the reference above 10x: check before trusting (KernelBench's flag)",
    )
    error: BenchError | None = None
    messages: list[str] = Field(default_factory=list)
    env: dict[str, Any] = Field(default_factory=dict)
    duration_s: float | None = None
    gate: GateReport | None = Field(default=None, description="the workspace gate command's own report")

    def shrunk(self) -> list[str]:
        """`<config>: num_rows 8192 -> 8` for every configuration run smaller than stated; a
        result with any is partial."""
        return [f"{c.name}: {text}" for c in self.configs if (text := c.shrunk_text())]

    @property
    def failed_configs(self) -> list[ConfigResult]:
        return [c for c in self.configs if not c.passed]


EXIT_PASS, EXIT_SETUP, EXIT_GATE_FAILED, EXIT_RESOURCE = 0, 2, 3, 4
EXIT_INTERRUPTED = 130  # a Ctrl-C, as a shell reports SIGINT (the CLI's own exit for one)
_SETUP = ("NOT RUN", EXIT_SETUP, "setup error: no verdict on the kernel")
# (the kernel ran, where the interpreter's known bf16 faults could explain its failure)
_INTERPRETER = ("NOT RUN", EXIT_SETUP, "an interpreter limit: no verdict on the kernel")
_CAP = ("STOPPED", EXIT_RESOURCE, "resource cap: no verdict on the answer")
# The kinds that are no FAIL: the headline word, `bench`'s exit status, and why, for each. A
# worker is a warm benchmark worker (engine/run/warm_worker.py), dead or hung mid-job: such a
# job is run again cold, whose verdict is the result (a kernel that kills the process running it
# is `crash`), so `worker` remains only where that re-run was cancelled. A harness error is
# kernelscope's own failure before any of the problem's files was read (kernels/fault_origin.py).
# Every other kind is a failed gate (3).
_NOT_JUDGED: dict[str, tuple[str, int, str]] = {
    "setup": _SETUP,
    "unsupported": ("UNSUPPORTED", EXIT_SETUP, "unsupported here: no verdict on the kernel"),
    "interpreter_limit": _INTERPRETER,
    "worker": ("STOPPED", EXIT_SETUP, "the benchmark worker died: no verdict on the kernel"),
    "interrupted": ("STOPPED", EXIT_INTERRUPTED, "interrupted: no verdict on the kernel"),
    "harness_error": ("STOPPED", EXIT_SETUP, "kernelscope's harness failed: no verdict on the kernel"),
    "out_of_memory": _CAP,
    "resource_limit": _CAP,
}
# The kernel was not judged (the trace store records nothing for these), or was judged but
# stopped by a cap before its answer was (no verdict on the answer).
NO_VERDICT_KINDS = frozenset(k for k, (_, status, _) in _NOT_JUDGED.items() if status != EXIT_RESOURCE)
RESOURCE_KINDS = frozenset(k for k, (_, status, _) in _NOT_JUDGED.items() if status == EXIT_RESOURCE)


def is_verdict_kind(kind: object) -> bool:
    """Whether `kind` is a known kind that judges the kernel (FAIL): the only kinds a gate
    check's exception (GateFailure, TimedCheckFailure) may carry. A kernel reaches those classes
    through importlib, and one raised with a no-verdict kind (`setup`, `harness_error`) or a cap's
    escaped its FAIL."""
    return kind in get_args(ErrorKind) and kind not in _NOT_JUDGED


def _not_judged(result: BenchResult) -> tuple[str, int, str] | None:
    return None if result.passed or result.error is None else _NOT_JUDGED.get(result.error.kind)


def shows_traceback(error: BenchError) -> bool:
    """Whether `bench` prints an error's traceback (its last frames) under it: where the
    harness failed, or may have (the words above); `--json` always has it."""
    return bool(error.traceback) and (
        HARNESS_FAILED in error.message or HARNESS_MAY_BE_AT_FAULT in error.message
    )


def judged_nothing(result: BenchResult) -> bool:
    """Nothing judged the kernel (a NO_VERDICT_KINDS error): there is nothing to record of it,
    not a failure (iterate records no version of such a run, the trace store no trace)."""
    return not result.passed and result.error is not None and result.error.kind in NO_VERDICT_KINDS


def exit_status(result: BenchResult) -> int:
    """A resource cap is not a wrong answer: a script must tell "shrink the problem or raise
    the cap" (4) from "the kernel is wrong" (3), and both from "nothing judged it" (2, or 130
    for a Ctrl-C)."""
    if result.passed:
        return EXIT_PASS
    found = _not_judged(result)
    return EXIT_GATE_FAILED if found is None else found[1]


def worst_exit_status(results: list[BenchResult]) -> int:
    """`--candidates`' status: an interruption (130) first, then a setup error (2), the run
    itself is broken; then a resource cap (4), no verdict on the answer; then a failed gate (3)."""
    statuses = {exit_status(r) for r in results}
    for status in (EXIT_INTERRUPTED, EXIT_SETUP, EXIT_RESOURCE, EXIT_GATE_FAILED):
        if status in statuses:
            return status
    return EXIT_PASS


def verdict_word(result: BenchResult) -> str:
    """A result's headline word, the same in `bench`'s first line, `--candidates`' table and the
    probe lens: only a judged kernel is PASS or FAIL; a setup error is NOT RUN, a resource cap,
    a dead worker, a harness error or an interruption STOPPED."""
    if result.passed:
        return "PASS"
    if result.status == "unsupported":
        return "UNSUPPORTED"
    found = _not_judged(result)
    return "FAIL" if found is None else found[0]


def verdict_why(result: BenchResult) -> str | None:
    """Why a NOT RUN or STOPPED is no verdict, in words (`bench`'s first line says it after the
    word); None for PASS, FAIL and UNSUPPORTED, which say it themselves."""
    found = _not_judged(result)
    return None if found is None or verdict_word(result) == "UNSUPPORTED" else found[2]


def verdict_headline(result: BenchResult) -> str:
    """`NOT RUN (setup error: no verdict on the kernel)`: the word and, where it is no verdict,
    why; `bench`'s first line and the probe's diagnostic begin with it."""
    why = verdict_why(result)
    return verdict_word(result) + (f" ({why})" if why else "")


def verdict_label(result: BenchResult) -> str:
    """`FAIL (wrong_result)`, `NOT RUN (setup)`, `PASS`: the word and the error's kind, where
    one line holds many facts (the probe lens, iterate's summary line and commit message)."""
    word = verdict_word(result)
    if word in ("PASS", "UNSUPPORTED"):  # UNSUPPORTED is its kind
        return word
    return f"{word} ({result.error.kind if result.error else 'gate'})"


class RankedCandidate(ClosedModel):
    """One candidate of `kernelscope bench --candidates`, in rank order."""

    rank: int
    candidate: str
    passed: bool
    score: float | None = None
    result: BenchResult


class CandidatesReport(ClosedModel):
    """Many variants measured against one baseline, best first; failures last."""

    workspace: str
    baseline: str
    executor: str
    ranking: list[RankedCandidate]
    wall_s: float | None = None
    comparable: bool = Field(
        default=True,
        description="false when a result is an interpreter run: then the ranking is by gate verdict "
        "only (passing first, in the order given), never by timing",
    )
    messages: list[str] = Field(default_factory=list)
