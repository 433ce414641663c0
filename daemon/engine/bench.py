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
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelscope.daemon.engine import child_limits
from kernelscope.daemon.engine.child_limits import ResourceLimits
from kernelscope.daemon.engine.errors import UsageError
from kernelscope.daemon.engine.readme_parser import parse_readme_file
from kernelscope.protocol.bench import BenchError, BenchResult, ConfigResult
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
    seeds: int = 3
    gate_command: str | None = None
    gate_timeout_s: float = 600.0
    extra_args: list[str] = field(default_factory=list)
    on_progress: Callable[[int, int], None] | None = None  # (configs done, total)
    env: dict[str, str] | None = None  # extra environment for the runner (e.g. a pinned GPU)


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


def _resolve(request: BenchRequest) -> tuple[BenchRequest, ReadmeInfo | None]:
    workspace = request.workspace.expanduser().resolve()
    if not workspace.is_dir():
        raise UsageError(f"workspace {workspace} does not exist")
    readme = parse_readme_file(workspace / "README.md") if (workspace / "README.md").is_file() else None
    settings = readme.bench if readme else {}
    candidate = (request.candidate or workspace / "kernel.py").expanduser().resolve()
    if not candidate.is_file():
        raise UsageError(f"candidate {candidate} does not exist")
    baseline = request.baseline or settings.get("baseline")
    if baseline is None:
        baseline = str(workspace / "baseline.py") if (workspace / "baseline.py").is_file() else "reference"
    if baseline != "reference":
        path = Path(baseline).expanduser()
        if not path.is_absolute() and not path.exists():
            path = workspace / path  # relative to the workspace (README block) if not to cwd
        if not path.is_file():
            raise UsageError(f"baseline {path} does not exist")
        baseline = str(path.resolve())
    reference = request.reference or (workspace / settings.get("reference", "reference.py"))
    resolved = BenchRequest(
        workspace=workspace,
        candidate=candidate,
        baseline=baseline,
        reference=Path(reference).resolve(),
        entry=request.entry or settings.get("entry_point", "kernel_fn"),
        mode=request.mode,
        python=request.python or os.environ.get(ENV_PYTHON) or sys.executable,
        timeout_s=float(settings.get("timeout_s", request.timeout_s)),
        memory_limit_mb=request.memory_limit_mb,
        seeds=request.seeds,
        gate_command=request.gate_command or settings.get("gate_command"),
        parent=request.parent,
        gate_timeout_s=request.gate_timeout_s,
        extra_args=list(request.extra_args),
        on_progress=request.on_progress,
        env=request.env,
    )
    return resolved, readme


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError), path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - STDERR_TAIL_BYTES))
        return handle.read().decode("utf-8", errors="replace")
    return ""


class _LineFollower:
    """Reads complete lines appended to the child's log since the last poll (bounded)."""

    def __init__(self, path: Path, on_line: Callable[[str], None] | None) -> None:
        self.path, self.on_line, self.offset, self.partial = path, on_line, 0, b""

    def poll(self) -> None:
        if self.on_line is None:
            return
        with contextlib.suppress(OSError), self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read(1 << 20)
            self.offset += len(chunk)
            *lines, self.partial = (self.partial + chunk).split(b"\n")
            self.partial = self.partial[-65536:]
            for line in lines:
                self.on_line(line.decode("utf-8", errors="replace"))


@dataclass
class ChildOutcome:
    returncode: int | None
    timed_out: bool
    cancelled: bool
    output_tail: str
    duration_s: float
    limit_exceeded: str | None = None  # which resource cap stopped it, as a sentence


WATCH_INTERVAL_S = 0.25  # how often the process group's memory and size are sampled


def run_child(
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    limits: ResourceLimits | None = None,
    cancel: threading.Event | None = None,
    env: dict[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> ChildOutcome:
    """Run a command in its own session with a timeout and resource caps; output goes to a
    file (and, line by line, to `on_line` while it runs). Whatever the child does, its whole
    group is gone when this returns."""
    limits = limits or ResourceLimits()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-child-") as tmp:
        log = Path(tmp) / "output.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
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
            # Reap anything the child left in its group or session (a forked grandchild).
            child_limits.kill_group(process.pid)
        return ChildOutcome(
            process.returncode,
            timed_out,
            cancelled,
            _tail(log),
            time.perf_counter() - started,
            exceeded,
        )


def _failure(request: BenchRequest, kind: str, message: str, **extra: Any) -> BenchResult:
    return BenchResult(
        status="error",
        passed=False,
        mode=request.mode if request.mode in ("gpu", "interpreter") else "interpreter",  # type: ignore[arg-type]
        workspace=str(request.workspace),
        candidate=str(request.candidate),
        baseline=str(request.baseline),
        entry_point=str(request.entry),
        error=BenchError(kind=kind, message=message, **extra),  # type: ignore[arg-type]
    )


def _classify_death(request: BenchRequest, outcome: ChildOutcome) -> BenchResult:
    tail = outcome.output_tail
    if outcome.timed_out:
        return _failure(
            request,
            "timeout",
            f"the benchmark ran past its {request.timeout_s:g} s limit and was killed",
            stderr_tail=tail,
        )
    if outcome.cancelled:
        return _failure(request, "timeout", "the benchmark was cancelled", stderr_tail=tail)
    if outcome.limit_exceeded:
        kind = "out_of_memory" if "memory" in outcome.limit_exceeded else "resource_limit"
        return _failure(
            request,
            kind,
            f"the benchmark {outcome.limit_exceeded} and was killed",
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


def run_gate_command(request: BenchRequest, cancel: threading.Event | None = None) -> BenchResult | None:
    """The workspace's own gate (e.g. `python test_kernel.py`): exit 0 passes.

    When the command prints a JSON object on its last JSON line,
    `{"passed": bool, "message": str, "configs": [{"name", "passed", "max_abs_err",
    "max_rel_err", "message"}]}`, those details are kept. None when no command is set.
    """
    if not request.gate_command:
        return None
    argv = shlex.split(request.gate_command)
    outcome = run_child(
        argv,
        request.workspace,
        request.gate_timeout_s,
        ResourceLimits.for_benchmark(request.memory_limit_mb),
        cancel,
    )
    details: dict[str, Any] = {}
    for line in reversed(outcome.output_tail.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                details = json.loads(line)
                break
    configs = []
    for item in details.get("configs", []) if isinstance(details.get("configs"), list) else []:
        with contextlib.suppress(ValidationError, TypeError):
            configs.append(
                ConfigResult(
                    name=str(item.get("name", "?")),
                    passed=bool(item.get("passed", False)),
                    max_abs_err=item.get("max_abs_err"),
                    max_rel_err=item.get("max_rel_err"),
                )
            )
    passed = outcome.returncode == 0 and not outcome.timed_out and not outcome.cancelled
    if passed:
        return BenchResult(
            status="ok",
            passed=True,
            mode="interpreter" if request.mode != "gpu" else "gpu",
            workspace=str(request.workspace),
            candidate=str(request.candidate),
            baseline=str(request.baseline),
            entry_point=str(request.entry),
            configs=configs,
            messages=[f"gate command passed: {request.gate_command}"],
        )
    if outcome.timed_out:
        message = f"gate command timed out after {request.gate_timeout_s:g} s: {request.gate_command}"
    elif outcome.limit_exceeded:
        message = f"gate command {outcome.limit_exceeded} and was killed: {request.gate_command}"
    else:
        message = str(
            details.get("message")
            or f"gate command exited with status {outcome.returncode}: {request.gate_command}"
        )
    result = _failure(
        request, "gate_command", message, stderr_tail=outcome.output_tail, exit_code=outcome.returncode
    )
    result.status = "gate_failed"
    result.configs = configs
    return result


PROGRESS_MARKER = "@@kernelscope-progress "


def _progress_reader(on_progress: Callable[[int, int], None] | None) -> Callable[[str], None] | None:
    if on_progress is None:
        return None

    def read(line: str) -> None:
        if line.startswith(PROGRESS_MARKER):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                data = json.loads(line[len(PROGRESS_MARKER) :])
                on_progress(int(data["done"]), int(data["total"]))

    return read


def run_benchmark(request: BenchRequest, cancel: threading.Event | None = None) -> BenchResult:
    """Gate command (if any), then the harness runner; always returns a BenchResult."""
    resolved, readme = _resolve(request)
    gate = run_gate_command(resolved, cancel)
    if gate is not None and not gate.passed:
        return gate
    if not resolved.reference or not resolved.reference.is_file():
        if gate is not None:
            gate.messages.append(f"no {resolved.reference} in the workspace: correctness only, no timing")
            return gate
        raise UsageError(f"no reference module {resolved.reference} (see the README's benchmark contract)")
    peak_gbps, peak_tflops = _peaks(readme) if readme else (None, None)
    with tempfile.TemporaryDirectory(prefix="kernelscope-bench-") as tmp:
        output = Path(tmp) / "result.json"
        argv = [
            str(resolved.python),
            "-m",
            "kernelscope.kernels.runner",
            "--workspace",
            str(resolved.workspace),
            "--candidate",
            str(resolved.candidate),
            "--baseline",
            str(resolved.baseline),
            "--reference",
            str(resolved.reference),
            "--entry",
            str(resolved.entry),
            "--mode",
            resolved.mode,
            "--seeds",
            str(resolved.seeds),
            "--output",
            str(output),
        ]
        if resolved.parent is not None:
            argv += ["--parent", str(resolved.parent)]
        if readme and readme.correctness_threshold:
            argv += ["--rel-err", str(readme.correctness_threshold.value)]
        if peak_gbps:
            argv += ["--peak-gbps", str(peak_gbps)]
        if peak_tflops:
            argv += ["--peak-tflops", str(peak_tflops)]
        argv += resolved.extra_args
        outcome = run_child(
            argv,
            resolved.workspace,
            resolved.timeout_s,
            ResourceLimits.for_benchmark(resolved.memory_limit_mb),
            cancel,
            env={**os.environ, **resolved.env} if resolved.env else None,
            on_line=_progress_reader(resolved.on_progress),
        )
        if outcome.timed_out or outcome.cancelled or outcome.limit_exceeded or not output.is_file():
            return _classify_death(resolved, outcome)
        try:
            result = BenchResult.model_validate_json(output.read_text(encoding="utf-8"))
        except (ValidationError, OSError) as exc:
            return _failure(
                resolved,
                "setup",
                f"the runner wrote an unreadable result: {exc}",
                stderr_tail=outcome.output_tail,
            )
    if gate is not None:
        result.messages.insert(0, f"gate command passed: {resolved.gate_command}")
    return result
