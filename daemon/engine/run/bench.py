"""Runs the benchmark harness in a child process and reads its `BenchResult`.

The daemon and the CLI never import torch, triton or the user's kernel: they start
`python -m kernelscope.kernels.runner` with the workspace's interpreter (configurable, since
kernel engineers keep torch/triton/CUDA in their own environment) in its own session,
with a wall-clock timeout, caps on resident memory, processes and output size
(`child_limits`), and its output going to a file (so a kernel that prints gigabytes cannot
fill the caller's memory). Whatever happens to the child, the
caller gets a `BenchResult`: a crash, a hang or an OOM kill is classified, with the tail of
the child's stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from kernelscope.daemon.engine import UsageError, counted
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.run import child_limits
from kernelscope.daemon.engine.run.bench_setup import (
    no_reference_message,
    own_gate_command,
    problem_settings,
    reference_path,
)
from kernelscope.daemon.engine.run.child_limits import ResourceLimits
from kernelscope.daemon.engine.run.cold_child import stand_in_spawn
from kernelscope.daemon.engine.run.gate_output import (
    GateLines,
    Workloads,
    configs_from_json_line,
    configs_from_report,
    measured_by,
    report_from,
    report_says_failed,
    summary,
)
from kernelscope.daemon.engine.run.run_mode import expected_mode
from kernelscope.daemon.engine.run.scratch import Scratch, scratch_copy
from kernelscope.daemon.engine.run.warm_worker import WarmWorkers, WorkerLost
from kernelscope.daemon.engine.workspace.kinds import folder_of, undeclared_triton_of
from kernelscope.daemon.engine.workspace.readme import parse_readme_file
from kernelscope.protocol import kinds
from kernelscope.protocol.bench import BenchError, BenchResult
from kernelscope.protocol.workspace import ReadmeInfo

STDERR_TAIL_BYTES = 4000
ENV_PYTHON = "KERNELSCOPE_BENCH_PYTHON"


@dataclass
class BenchRequest:
    """What to benchmark. Paths default from the workspace and its README's block."""

    workspace: Path
    candidate: Path | None = None  # default: WORKSPACE/kernel.py
    baseline: str | None = None  # 'reference', a kernel file; default baseline.py if present
    reference: Path | None = None  # default: WORKSPACE/reference.py
    parent: Path | None = None  # also time this kernel (the parent version)
    entry: str | None = None  # default: kernel_fn
    mode: str = "auto"  # auto | gpu | interpreter
    python: str | None = None  # default: $KERNELSCOPE_BENCH_PYTHON or this interpreter
    timeout_s: float = 900.0
    memory_limit_mb: int | None = None  # resident memory cap; None: half of RAM, 0: none
    seeds: int | None = None  # None: the evaluator's own count (KernelBench 5, SOL-ExecBench 10, else 3)
    gate_command: str | None = None
    gate_timeout_s: float = 600.0
    extra_args: list[str] = field(default_factory=list)
    on_progress: Callable[[int, int], None] | None = None  # (configs done, total)
    env: dict[str, str] | None = None  # extra environment for the runner (e.g. a pinned GPU)
    # integer constants of the reference module to replace (KernelBench's batch_size, dim...),
    # over the README block's "problem_sizes"
    problem_sizes: dict[str, int] = field(default_factory=dict)
    precision: str | None = None  # KernelBench's fp32 | fp16 | bf16; default the README's, else fp32


def _peaks(readme: ReadmeInfo) -> tuple[float | None, float | None]:
    """Peak bandwidth (GB/s) and TFLOPS from the README's hardware specs, if cited."""
    bandwidth = tflops = None
    dtype = (readme.target.dtype or "").lower()
    for spec in readme.hardware_specs:
        if not spec.known or spec.value is None or not spec.unit:
            continue
        unit = spec.unit.lower()
        if unit in ("tb/s", "gb/s") and bandwidth is None and "l2" not in spec.metric.lower():
            bandwidth = spec.value * (1000.0 if unit == "tb/s" else 1.0)
        if unit in ("t", "tflops", "tflop/s") and (
            tflops is None or (dtype and dtype in spec.metric.lower())
        ):
            tflops = spec.value
    return bandwidth, tflops


def _resolve(request: BenchRequest) -> tuple[BenchRequest, ReadmeInfo | None, kinds.KindSpec]:
    workspace = request.workspace.expanduser().resolve()
    if not workspace.is_dir():
        raise UsageError(f"workspace {workspace} does not exist")
    readme = parse_readme_file(workspace / "README.md") if (workspace / "README.md").is_file() else None
    settings = readme.bench if readme else {}
    candidate = (request.candidate or workspace / "kernel.py").expanduser().resolve()
    if not candidate.is_file():
        raise UsageError(f"candidate {candidate} does not exist")
    reference = reference_path(request.reference, settings, workspace)
    folder = folder_of(workspace, readme)
    folder.reference = reference
    spec = kinds.detect(folder)
    own = spec.own_gate
    gate_command = request.gate_command or settings.get("gate_command")
    if own is not None and not gate_command:
        gate_command = own_gate_command(spec, folder)
    # a kind measured by its own evaluator: its speedups are against what that evaluator says
    baseline = own.baseline if own is not None else request.baseline or settings.get("baseline")
    if baseline is None:
        baseline = str(workspace / "baseline.py") if (workspace / "baseline.py").is_file() else "reference"
    if baseline != "reference" and own is None:
        path = Path(baseline).expanduser()
        if not path.is_absolute() and not path.exists():
            path = workspace / path  # relative to the workspace (README block) if not to cwd
        if not path.is_file():
            raise UsageError(f"baseline {path} does not exist")
        baseline = str(path.resolve())
    problem_sizes, precision = problem_settings(request.problem_sizes, request.precision, settings)
    resolved = BenchRequest(
        workspace=workspace,
        candidate=candidate,
        baseline=baseline,
        reference=reference,
        entry=request.entry or settings.get("entry_point") or (own.entry_point if own else "kernel_fn"),
        mode=request.mode,
        python=request.python or os.environ.get(ENV_PYTHON) or sys.executable,
        timeout_s=float(settings.get("timeout_s", request.timeout_s)),
        memory_limit_mb=request.memory_limit_mb,
        seeds=request.seeds,
        gate_command=gate_command,
        parent=request.parent,
        gate_timeout_s=request.gate_timeout_s,
        extra_args=list(request.extra_args),
        on_progress=request.on_progress,
        env=request.env,
        problem_sizes=problem_sizes,
        precision=precision,
    )
    return resolved, readme, spec


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError), path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - STDERR_TAIL_BYTES))
        return handle.read().decode("utf-8", errors="replace")
    return ""


MAX_PARTIAL_LINE = 1 << 20  # a gate's RESULT_JSON line with many workloads fits


class _LineFollower:
    """Reads complete lines appended to the child's log since the last poll (bounded)."""

    def __init__(self, path: Path, on_line: Callable[[str], None] | None) -> None:
        self.path, self.on_line, self.offset, self.partial = path, on_line, 0, b""

    def poll(self) -> None:
        """Everything appended since the last poll, up to the end of the file, 1 MiB at a time:
        a child that printed more than a chunk between polls (or before it exited) must not
        leave its last lines, a gate's RESULT_JSON, unread. The log is capped (64 MB)."""
        if self.on_line is None:
            return
        with contextlib.suppress(OSError), self.path.open("rb") as handle:
            handle.seek(self.offset)
            while chunk := handle.read(1 << 20):
                self.offset += len(chunk)
                *lines, self.partial = (self.partial + chunk).split(b"\n")
                self.partial = self.partial[-MAX_PARTIAL_LINE:]
                for line in lines:
                    self.on_line(line.decode("utf-8", errors="replace"))

    def flush(self) -> None:
        """The last line, when the child exited without ending it with a newline."""
        self.poll()
        if self.on_line is not None and self.partial:
            line, self.partial = self.partial, b""
            self.on_line(line.decode("utf-8", errors="replace"))


@dataclass
class ChildOutcome:
    returncode: int | None
    timed_out: bool
    cancelled: bool
    output_tail: str
    duration_s: float
    limit_exceeded: str | None = None  # which resource cap stopped it, as a sentence
    worker_error: str | None = None  # the warm worker running it died or stopped answering
    parent_killed: str | None = None  # how the cold child's stand-in parent died: the code killed it


WATCH_INTERVAL_S = 0.25  # how often the process group's memory and size are sampled


class ChildHandle(Protocol):
    """What `run_child` needs of a started child: a cold child's stand-in has it
    (`cold_child.StandInChild`, which adds `parent_killed`), and so has a warm worker's job
    (`warm_worker.WorkerJob`, which adds `worker_error`)."""

    pid: int
    returncode: int | None

    def wait(self, timeout: float | None = None) -> int | None: ...


# spawn(argv, cwd, env, log, limits): start the child in its own session, its output (stdout
# and stderr) appended to `log`; raises OSError when it cannot start at all. The cold path is
# `cold_child.stand_in_spawn`: the child's parent is a stand-in, never this process.
Spawn = Callable[[list[str], Path, dict[str, str], Path, ResourceLimits], ChildHandle]


def run_child(
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    limits: ResourceLimits | None = None,
    cancel: threading.Event | None = None,
    env: dict[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
    spawn: Spawn | None = None,
) -> ChildOutcome:
    """Run a command in its own session with a timeout and resource caps; output goes to a
    file (and, line by line, to `on_line` while it runs). Whatever the child does, its whole
    group is gone when this returns.

    `spawn` starts the child (default: a new process under a stand-in parent,
    `cold_child.stand_in_spawn`; a warm worker's
    `WarmWorker.spawn` forks it from a process that has torch and triton imported). The
    watchdog is the same either way: it samples, caps and kills the child's process group.

    `cwd` should be a scratch copy (`scratch.scratch_copy`), never the workspace: nothing
    kernelscope runs may write there. The child never writes bytecode files
    (PYTHONDONTWRITEBYTECODE=1), so a file it imports from outside its cwd (a candidate
    elsewhere, the editor's last-passing kernel) gains no `__pycache__/` next to it."""
    limits = limits or ResourceLimits()
    env = {**(os.environ if env is None else env), "PYTHONDONTWRITEBYTECODE": "1"}
    spawn = spawn or stand_in_spawn
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-child-") as tmp:
        log = Path(tmp) / "output.log"
        log.touch()
        try:
            process = spawn(argv, cwd, env, log, limits)
        except WorkerLost as exc:  # the worker died before the child existed
            return ChildOutcome(None, False, False, _tail(log), time.perf_counter() - started, None, str(exc))
        try:
            child_limits.apply_to(process.pid, limits)
            timed_out = cancelled = False
            exceeded: str | None = None
            deadline = started + timeout_s
            next_watch = started + WATCH_INTERVAL_S
            follower = _LineFollower(log, on_line)
            while True:
                try:
                    process.wait(timeout=0.05)
                    follower.poll()
                    break
                except subprocess.TimeoutExpired:
                    follower.poll()
                now = time.perf_counter()
                if cancel is not None and cancel.is_set():
                    cancelled = True
                elif now > deadline:
                    timed_out = True
                elif now >= next_watch:
                    next_watch = now + WATCH_INTERVAL_S
                    exceeded = child_limits.over_limit(limits, process.pid, log)
                    if exceeded is None:
                        continue
                else:
                    continue
                child_limits.kill_group(process.pid)
                process.wait()
                break
        finally:
            # Reap anything the child left in its group or session (a forked grandchild), and
            # the child itself when this is unwinding (Ctrl-C; SIGTERM, which the CLI turns
            # into SystemExit): in its own session nothing else would stop it, and its
            # timeout and memory cap die with this loop.
            child_limits.kill_group(process.pid)
            _wait_gone(process.pid)
            if process.returncode is None:
                with contextlib.suppress(Exception):
                    process.wait(timeout=GONE_TIMEOUT_S)
        follower.flush()
        return ChildOutcome(
            process.returncode,
            timed_out,
            cancelled,
            _tail(log),
            time.perf_counter() - started,
            exceeded,
            getattr(process, "worker_error", None),
            getattr(process, "parent_killed", None),
        )


GONE_TIMEOUT_S = 10.0


def _wait_gone(group: int, timeout_s: float = GONE_TIMEOUT_S) -> None:
    """Until no live process of the group is left (bounded): a killed process is still
    tearing down its address space for a moment, and a fork bomb's hundreds of children,
    each a copy of a process that imported torch, take a while to release their memory. Only
    zombies (which their new parent reaps) may remain when this returns."""
    deadline = time.monotonic() + timeout_s
    while True:
        usage = child_limits.group_usage(group)
        if usage is None or usage.processes == 0 or time.monotonic() > deadline:
            return
        child_limits.kill_group(group, rounds=1)
        time.sleep(0.02)


def _reference_name(request: BenchRequest) -> str | None:
    """The reference module the harness checks against, as the workspace names it (a
    KernelBench problem keeps its own: 32_HardTanh.py), for what the result says."""
    return None if request.reference is None else os.path.relpath(request.reference, request.workspace)


def _failure(request: BenchRequest, kind: str, message: str, **extra: Any) -> BenchResult:
    return BenchResult(
        status="error",
        passed=False,
        mode=request.mode if request.mode in ("gpu", "interpreter") else "interpreter",  # type: ignore[arg-type]
        workspace=str(request.workspace),
        candidate=str(request.candidate),
        baseline=str(request.baseline),
        reference=_reference_name(request),
        entry_point=str(request.entry),
        error=BenchError(kind=kind, message=message, **extra),  # type: ignore[arg-type]
    )


def _classify_death(request: BenchRequest, outcome: ChildOutcome) -> BenchResult:
    """Why the runner left no result. A dead warm worker is no verdict (`_run_harness` runs
    the job again cold first: this is reached only when that cannot be done)."""
    tail = outcome.output_tail
    if outcome.worker_error:
        return _failure(
            request,
            "worker",
            f"{outcome.worker_error}; this job's processes were killed with it",
            stderr_tail=tail,
        )
    if outcome.timed_out:
        return _failure(
            request,
            "timeout",
            f"the benchmark ran past its {request.timeout_s:g} s limit and was killed",
            stderr_tail=tail,
        )
    if outcome.cancelled:  # stopped by its caller (a newer probe, Ctrl-C): no verdict, no timeout
        return _failure(request, "interrupted", "the benchmark was cancelled", stderr_tail=tail)
    if outcome.limit_exceeded:
        kind = "out_of_memory" if "memory" in outcome.limit_exceeded else "resource_limit"
        return _failure(
            request,
            kind,
            f"the benchmark {outcome.limit_exceeded} and was killed",
            stderr_tail=tail,
            exit_code=outcome.returncode,
        )
    if outcome.parent_killed:  # the stand-in died before its command: the code under it did it
        return _failure(
            request,
            "crash",
            f"the kernel killed the process running it ({outcome.parent_killed})",
            stderr_tail=tail,
            exit_code=outcome.returncode,
        )
    code = outcome.returncode or 0
    if -code == getattr(signal, "SIGXFSZ", -1):
        return _failure(
            request,
            "resource_limit",
            f"the benchmark wrote a file past the {child_limits.HARD_FILE_SIZE_MB} MB size cap "
            "(SIGXFSZ) and was killed",
            stderr_tail=tail,
            exit_code=code,
        )
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        if -code == signal.SIGKILL:
            return _failure(
                request,
                "out_of_memory",
                "the benchmark process was killed (SIGKILL), most likely for running out of memory",
                stderr_tail=tail,
                exit_code=code,
            )
        return _failure(
            request,
            "crash",
            f"the benchmark process died with {name} (a crash in the kernel or a library)",
            stderr_tail=tail,
            exit_code=code,
        )
    if "MemoryError" in tail or "out of memory" in tail.lower():
        return _failure(
            request,
            "out_of_memory",
            "the benchmark process ran out of memory",
            stderr_tail=tail,
            exit_code=code,
        )
    return _failure(
        request,
        "exception",
        f"the benchmark process exited with status {code} without a result",
        stderr_tail=tail,
        exit_code=code,
    )


def run_gate_command(
    request: BenchRequest, cancel: threading.Event | None = None, own: kinds.OwnGate | None = None
) -> BenchResult | None:
    """The workspace's own gate (e.g. `python test_kernel.py --no-memory`): exit 0 passes.

    It runs in a scratch copy of the workspace (`scratch.scratch_copy`): a gate is the
    workspace owner's program and writes where it likes (atrex's test_kernel.py leaves
    `traces.jsonl` and `submission.json` in its cwd), but nothing kernelscope runs may change
    the workspace. A word of the command naming a path inside the workspace is pointed into
    the copy; `python` is whatever PATH finds.

    What the gate prints is read line by line (`gate_output`): a `<prefix> RESULT_JSON={...}`
    line gives per-workload latencies (one configuration each), the geomean speedup vs the
    gate's reference (the score), errors and named failures; a bare JSON line
    `{"passed", "message", "configs": [...]}` gives per-configuration verdicts. Either one
    saying it did not pass fails the gate even on exit status 0. None when no command is set.

    `own`: the workspace kind's own evaluator (Atrex-Bench's test_kernel.py), whose ignored
    runtime (`atrex-bench/`) the copy also holds and whose baseline the result names.
    """
    if not request.gate_command:
        return None
    from kernelscope.daemon.engine.workspace.user_config import command_words

    command = request.gate_command
    words = command_words(command, "the gate command", "the gate command is empty")
    workspace = request.workspace.expanduser().resolve()
    lines = GateLines()
    runtime = own.runtime if own is not None else ()
    with scratch_copy(workspace, prefix="kernelscope-gate-", ignored=runtime) as scratch:
        scratch.stand_in(request.candidate)
        env = scratch.env(request.env)
        mode = expected_mode(request.mode, env)
        try:
            outcome = run_child(
                [scratch.map_argument(word) for word in words],
                scratch.root,
                request.gate_timeout_s,
                ResourceLimits.for_benchmark(request.memory_limit_mb),
                cancel,
                env=env,
                on_line=lines.feed,
            )
        except OSError as exc:  # no such program, not executable
            result = _failure(request, "gate_command", f"the gate command could not start: {exc}")
            result.status, result.mode = "gate_failed", mode  # type: ignore[assignment]
            return result
    report = None
    if lines.result_json is not None:
        report = report_from(command, lines.result_json[0], lines.result_json[1], outcome.returncode)
        if report.total is None:  # Atrex-Bench's test_kernel.py prints none: its shapes.json entries
            report.total = len(Workloads.read(workspace).axes) or None
    details = lines.json_line or {}
    by = measured_by(words, report.source if report else None)
    configs = configs_from_report(report, workspace) if report else configs_from_json_line(details)
    finished = not (outcome.timed_out or outcome.cancelled or outcome.limit_exceeded or outcome.parent_killed)
    says_failed = report_says_failed(report) if report is not None else details.get("passed") is False
    messages = [summary(report, by)] if report else []
    # CPU timings are no GPU figures: the result says so as the harness's does
    comparable = mode != "interpreter"
    if finished and outcome.returncode == 0 and not says_failed:
        timed = report is not None and bool(report.latency_us_by_shape)
        # the rule every record is read by: the objective's score (atrex v0.3), else the geomean
        reference = atrex_fields.reference_speedup(report) if report else None
        speedup = reference.value if reference is not None else None
        if timed and mode == "interpreter":
            messages.append("interpreter mode: the gate's timings are CPU figures, not GPU ones")
        return BenchResult(
            status="ok",
            passed=True,
            mode=mode,  # type: ignore[arg-type]
            workspace=str(workspace),
            candidate=str(request.candidate),
            # the gate's speedup is against its own reference (SOL-ExecBench's reference.py)
            baseline=str(request.baseline) if own is not None or not timed else "reference",
            entry_point=str(request.entry),
            configs=configs,
            score=speedup if timed and speedup else None,
            comparable=comparable,
            verdict=None if comparable or not timed else "not comparable",
            messages=[f"gate command passed: {command}", *messages],
            gate=report,
        )
    if outcome.timed_out:
        message = f"gate command timed out after {request.gate_timeout_s:g} s: {command}"
    elif outcome.cancelled:
        message = f"gate command was cancelled: {command}"
    elif outcome.limit_exceeded:
        message = f"gate command {outcome.limit_exceeded} and was killed: {command}"
    elif outcome.parent_killed:
        message = f"gate command killed the process running it ({outcome.parent_killed}): {command}"
    elif report is not None and report.failures:
        # workloads, not lines: one shape may fail at two stages
        failed = sum(not c.passed for c in configs) or len(report.failures)
        count = f"{failed} of {report.total} workloads" if report.total else counted(failed, "workload")
        named = "; ".join(report.failures)
        message = f"{by} failed {count}: {named[:2000]}"
    elif report is not None and says_failed:
        counts = "all_pass=false" if report.all_pass is False else f"{report.passed}/{report.total} passed"
        message = f"{by} reported {counts} (exit status {outcome.returncode}): {command}"
    else:
        message = str(
            details.get("message") or f"gate command exited with status {outcome.returncode}: {command}"
        )
    stopped = outcome.cancelled  # by its caller: no verdict on the kernel, not a failed gate
    kind = "interrupted" if stopped else "gate_command"
    result = _failure(request, kind, message, stderr_tail=outcome.output_tail, exit_code=outcome.returncode)
    result.status, result.mode = "error" if stopped else "gate_failed", mode  # type: ignore[assignment]
    result.workspace = str(workspace)
    result.configs, result.messages, result.gate = configs, messages, report
    result.comparable = comparable
    return result


PROGRESS_MARKER = "@@kernelscope-progress "


def _not_the_runners(
    result: BenchResult, body: bytes, output: Path, key: bytes, request: BenchRequest, env: dict[str, str]
) -> str | None:
    """Why the result file cannot be the runner's (None: it can). The candidate runs in the
    runner's process and can write `--output` itself: the runner's signature must verify, and
    a pass must have measured something in the mode this launcher asked for."""
    try:
        signature = Path(f"{output}.sig").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        signature = ""
    if not hmac.compare_digest(signature, hmac.new(key, body, hashlib.sha256).hexdigest()):
        return (
            "the result file is not the harness runner's (its signature does not verify): the "
            "candidate, which runs in its process and can read --output from its command line, wrote it"
        )
    if not result.passed:
        return None
    if not result.configs and "--config-group" not in request.extra_args:  # (a group may be empty)
        return "the result claims a pass with no configuration measured: not the harness runner's"
    expected = expected_mode(request.mode, env)
    if result.mode != expected and (request.mode != "auto" or expected == "interpreter"):
        return f"the result claims mode {result.mode}, where this launcher ran it in {expected} mode"
    return None


def _progress_reader(on_progress: Callable[[int, int], None] | None) -> Callable[[str], None] | None:
    if on_progress is None:
        return None

    def read(line: str) -> None:
        if line.startswith(PROGRESS_MARKER):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                data = json.loads(line[len(PROGRESS_MARKER) :])
                on_progress(int(data["done"]), int(data["total"]))

    return read


def run_benchmark(
    request: BenchRequest, cancel: threading.Event | None = None, workers: WarmWorkers | None = None
) -> BenchResult:
    """Gate command (if any), then the harness runner; always returns a BenchResult.

    Each command runs in its own scratch copy of the workspace; both copies are taken before
    either command starts, so the gate and the harness judge the same files even while an
    agent keeps editing the workspace.

    With `workers` (the daemon's, or a local candidate batch's), the harness runner is forked
    by a warm worker of the request's interpreter and mode instead of started cold; the
    supervision, the caps and the result are the same (`warm_worker`). The gate command, a
    workspace's own program, always starts cold.
    """
    resolved, readme, spec = _resolve(request)
    if spec.own_gate is not None:  # measured by its own evaluator alone (Atrex-Bench)
        gate = run_gate_command(resolved, cancel, spec.own_gate)
        assert gate is not None  # _resolve names the kind's gate or refuses
        return gate
    has_reference = bool(resolved.reference and resolved.reference.is_file())
    if not has_reference and not resolved.gate_command:
        raise UsageError(no_reference_message(resolved.reference, spec))
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(scratch_copy(resolved.workspace)) if has_reference else None
        gate = run_gate_command(resolved, cancel)
        if gate is not None and not gate.passed:
            return gate
        if scratch is None:
            assert gate is not None
            if gate.gate is None or not gate.gate.latency_us_by_shape:
                gate.messages.append(f"no {resolved.reference} in the workspace: correctness only, no timing")
            return gate
        result = _run_harness(resolved, readme, scratch, cancel, workers)
    result.messages += undeclared_triton_of(resolved.workspace, readme, resolved.candidate)
    if gate is None:
        return result
    gate_timed = gate.gate is not None and bool(gate.gate.latency_us_by_shape)
    if gate_timed and result.error is not None and result.error.kind == "setup" and not result.configs:
        # The harness cannot read this workspace's reference (a contract it has no adapter
        # for); the gate measured it: its numbers are the result, and the reason is kept. Only
        # a setup error before any configuration ran: a kernel's own ProblemError is never
        # setup (adapters/base.py's KernelImportError, the runner's run_config).
        gate.messages.append(f"the harness could not run this workspace ({result.error.message})")
        return gate
    result.gate = gate.gate
    result.messages[0:0] = gate.messages  # "gate command passed: ..." and the gate's numbers
    return result


def _noted(result: BenchResult, notes: list[str]) -> BenchResult:
    result.messages += [note for note in notes if note not in result.messages]
    return result


def _run_harness(
    resolved: BenchRequest,
    readme: ReadmeInfo | None,
    scratch: Scratch,
    cancel: threading.Event | None,
    workers: WarmWorkers | None = None,
) -> BenchResult:
    """The harness runner in `scratch`: every path it is given that the copy holds points
    into the copy; paths in its result are reported as the workspace's own."""
    peak_gbps, peak_tflops = _peaks(readme) if readme else (None, None)
    with tempfile.TemporaryDirectory(prefix="kernelscope-bench-") as tmp:
        output = Path(tmp) / "result.json"
        key_file = Path(tmp) / "result.key"
        argv = [
            str(resolved.python),
            "-m",
            "kernelscope.kernels.runner",
            "--workspace",
            str(scratch.root),
            "--candidate",
            str(scratch.map(resolved.candidate)),
            "--baseline",
            "reference" if resolved.baseline == "reference" else str(scratch.map(resolved.baseline)),
            "--reference",
            str(scratch.map(resolved.reference)),
            "--entry",
            str(resolved.entry),
            "--mode",
            resolved.mode,
            "--output",
            str(output),
            "--result-key",
            str(key_file),
        ]
        # the adapter the one kinds rule names (a kind registered in this process included)
        argv += ["--adapter", kinds.adapter_for(kinds.Folder(resolved.workspace, resolved.reference))]
        if resolved.seeds is not None:
            argv += ["--seeds", str(resolved.seeds)]
        if resolved.parent is not None:
            argv += ["--parent", str(scratch.map(resolved.parent))]
        if readme and readme.correctness_threshold:
            argv += ["--rel-err", str(readme.correctness_threshold.value)]
        if peak_gbps:
            argv += ["--peak-gbps", str(peak_gbps)]
        if peak_tflops:
            argv += ["--peak-tflops", str(peak_tflops)]
        for name, value in resolved.problem_sizes.items():
            argv += ["--problem-size", f"{name}={value}"]
        if resolved.precision:
            argv += ["--precision", resolved.precision]
        cap_mb = ResourceLimits.for_benchmark(resolved.memory_limit_mb).memory_mb
        if cap_mb:  # the runner refuses a problem it can tell will not fit, before allocating
            argv += ["--memory-cap-mb", str(cap_mb)]
        argv += resolved.extra_args
        env = scratch.env(resolved.env)
        worker = None
        if workers is not None and not (cancel is not None and cancel.is_set()):
            env = workers.job_env(env, scratch.cache)
            worker = workers.acquire(str(resolved.python), resolved.mode, env)

        def attempt(spawn: Spawn | None) -> tuple[ChildOutcome, bytes]:
            for stale in (output, Path(f"{output}.sig")):
                stale.unlink(missing_ok=True)
            key = secrets.token_bytes(32)  # the runner signs its result with it (kernels/result_seal.py)
            key_file.touch(mode=0o600)
            key_file.write_bytes(key)
            limits = ResourceLimits.for_benchmark(resolved.memory_limit_mb)
            reader = _progress_reader(resolved.on_progress)
            return run_child(argv, scratch.root, resolved.timeout_s, limits, cancel, env, reader, spawn), key

        try:
            outcome, key = attempt(worker.spawn if worker is not None else None)
        finally:
            if worker is not None:
                workers.release(worker)  # type: ignore[union-attr]
        notes: list[str] = []
        if outcome.worker_error and not (cancel is not None and cancel.is_set()):
            # The worker died mid-job, killed by the kernel or by something else (the OOM killer,
            # a user): a cold run decides, whose stand-in parent's death is the kernel's doing.
            notes.append(
                scratch.restore_text(f"{outcome.worker_error}: the job was run again in a fresh process")
            )
            worker = None
            outcome, key = attempt(None)
        outcome.output_tail = scratch.restore_text(outcome.output_tail)
        # a dead parent (worker or stand-in) is the verdict even where its child, still running
        # for a moment, wrote a result
        died = outcome.worker_error or outcome.parent_killed or outcome.timed_out or outcome.cancelled
        if died or outcome.limit_exceeded or not output.is_file():
            return _noted(_classify_death(resolved, outcome), notes)
        try:
            body = output.read_bytes()
            result = BenchResult.model_validate_json(body)
        except (ValidationError, OSError) as exc:
            failed = _failure(
                resolved,
                "setup",
                f"the runner wrote an unreadable result: {exc}",
                stderr_tail=outcome.output_tail,
            )
            return _noted(failed, notes)
        forged = _not_the_runners(result, body, output, key, resolved, env)
        if forged:
            failed = _failure(resolved, "cheat", forged, stderr_tail=outcome.output_tail)
            failed.status = "gate_failed"
            return _noted(failed, notes)
    if worker is not None:  # how it ran: a forked child of this warm worker
        result.env["warm_worker"] = {"pid": worker.pid, "job": worker.jobs}
    _noted(result, notes)
    result.reference = _reference_name(resolved)
    return BenchResult.model_validate(scratch.restore(result.model_dump()))
