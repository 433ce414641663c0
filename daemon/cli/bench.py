"""`kernelscope bench`: run the harness on a workspace and print the result.

Exit statuses: 0 the gate passed, 3 it failed (wrong result, a cheat, a crash, a hang, a
compile error, an exception once the kernel's files were read, even where no frame of them is
in its traceback: then the message says kernelscope may be at fault), 2 a usage or setup error
(no such workspace, no reference module, a configuration the CPU interpreter cannot run, a
problem too large for the memory cap; `harness_error`, kernelscope failing before it read the
problem's files),
4 a resource cap stopped the run (out of memory, too many processes, too much output): not
a verdict on the answer; 130 a Ctrl-C stopped it (with --candidates, after reporting the
candidates that finished, the others `interrupted`).

With `--json` every outcome prints exactly one JSON document on stdout: the `BenchResult`
(status "error" and `error.kind`/`error.message` for a setup error), or, for a usage error
found before any run (a bad flag), `{"schema_version", "status": "error", "passed": false,
"error": {"kind": "setup", "message"}}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import OptInt
from kernelscope.daemon.engine import KernelscopeError, counted
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.run.bench_setup import PRECISIONS
from kernelscope.protocol.bench import (
    BENCH_SCHEMA_VERSION,
    EXIT_INTERRUPTED,
    EXIT_SETUP,
    MAX_TIMING_MS,
    BenchError,
    BenchResult,
    exit_status,
    shows_traceback,
    verdict_headline,
    verdict_word,
    worst_exit_status,
)
from kernelscope.protocol.sizes import SizeError, parse_problem_sizes


def usage_error_document(message: str, kind: str = "setup") -> dict[str, Any]:
    """The one JSON document `--json` prints where there is no result: a usage error found
    before any run, or a run a Ctrl-C stopped (`kind` "interrupted"); the fields of a
    `BenchResult` that mean something without one."""
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "status": "error",
        "passed": False,
        "error": {"kind": kind, "message": message},
    }


def _setup_error_result(request: BenchRequest, message: str) -> BenchResult:
    """A setup error the engine raised (no such workspace, reference or candidate), as the
    `BenchResult` a run would have printed; fields not resolved yet are empty."""
    return BenchResult(
        status="error",
        passed=False,
        mode="gpu" if request.mode == "gpu" else "interpreter",
        workspace=str(request.workspace),
        candidate=str(request.candidate or ""),
        baseline=str(request.baseline or ""),
        entry_point=str(request.entry or ""),
        error=BenchError(kind="setup", message=message),
    )


def bench_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    candidate: Annotated[
        Optional[Path],  # noqa: UP045 - typer reads the annotation at runtime
        typer.Option("--candidate", "-c", help="Kernel file to measure (default: kernel.py)."),
    ] = None,
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--baseline", help="'reference' or a kernel file (default: baseline.py if present)."),
    ] = None,
    entry: Annotated[Optional[str], typer.Option("--entry", help="Entry point (default kernel_fn).")] = None,  # noqa: UP045
    mode: Annotated[str, typer.Option("--mode", help="auto, gpu or interpreter.")] = "auto",
    python: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--python", help="Interpreter with torch/triton (default: $KERNELSCOPE_BENCH_PYTHON or this one)."
        ),
    ] = None,
    seeds: Annotated[
        OptInt,
        typer.Option(
            "--seeds",
            min=1,
            help="Input draws per configuration (default: the evaluator's own count: KernelBench 5, "
            "SOL-ExecBench 10, else 3).",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Wall-clock limit in seconds.")] = 900.0,
    memory_limit_mb: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--memory-limit-mb",
            min=0,
            help="Resident-memory cap (MB) for the benchmark's processes; default half of RAM, 0: none.",
        ),
    ] = None,
    gate_command: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--gate-command", help="The workspace's own gate, e.g. 'python test_kernel.py'."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the BenchResult as JSON.")] = False,
    candidates: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option("--candidates", help="Several kernel files (or a directory): measure and rank them."),
    ] = None,
    more_candidates: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Argument(help="More candidates (so '--candidates a.py b.py c.py' works).", show_default=False),
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="local or ray.")] = "local",
    config_groups: Annotated[
        int,
        typer.Option(
            "--config-groups",
            min=1,
            help="With --candidates: split each candidate's configurations into N tasks.",
        ),
    ] = 1,
    address: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--address", help="Ray cluster address (default: start or join a local Ray)."),
    ] = None,
    reference: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--reference",
            help="Reference module, any file name (a KernelBench problem as it is); relative to "
            "the current directory or the workspace. Default: the README block's "
            '"reference", else reference.py.',
        ),
    ] = None,
    problem_size: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--problem-size",
            metavar="NAME=VALUE",
            help="Set an integer constant of the reference module before its inputs are built "
            "(KernelBench: batch_size=16, dim=1024). Repeatable.",
        ),
    ] = None,
    precision: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--precision",
            help="KernelBench precision: fp32 (default), fp16 or bf16; inputs and models are cast, "
            "the tolerance follows (1e-4, 1e-2, 1e-2).",
        ),
    ] = None,
    rep_ms: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--rep-ms",
            min=1,
            max=MAX_TIMING_MS,
            help="GPU: timed milliseconds per phase (each function is timed twice per ABBA round) and "
            "configuration (default 100); as many calls as fit, at least 10 and at most 1,000. Not used "
            "under the CPU interpreter (the result says so).",
        ),
    ] = None,
    warmup_ms: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--warmup-ms",
            min=0,
            max=MAX_TIMING_MS,
            help="GPU: warm-up milliseconds before each function's first timed phase per configuration "
            "(default 25; at most 1,000 calls).",
        ),
    ] = None,
    cuda_graph: Annotated[
        bool,
        typer.Option(
            "--cuda-graph",
            help="GPU: time the replays of a CUDA graph of each call (L2 flushed before every replay) "
            "instead of the calls; under the CPU interpreter the result says it was not used.",
        ),
    ] = False,
    rounds: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--rounds", min=1, help="ABBA rounds per configuration (default 2): more, tighter intervals."
        ),
    ] = None,
    static_rules: Annotated[
        bool,
        typer.Option(
            "--static-rules/--no-static-rules",
            help="Fail a candidate that breaks a static rule (KernelBench's and kernelscope's) before it "
            "runs; --no-static-rules runs it anyway, so the runtime checks speak.",
        ),
    ] = True,
    trace: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--trace",
            metavar="FILE",
            help="Append one FlashInfer-Bench / SOL-ExecBench Trace record per configuration (JSON lines).",
        ),
    ] = None,
) -> None:
    """Benchmark and gate the kernel: correctness on several seeds, then A/B timing.

    Exit statuses: 0 passed; 3 failed (wrong result, cheat, crash, hang, compile error, an
    exception: where no frame of the problem's files is in it, kernelscope may be at fault and
    its last frames are printed, to report); 2 usage or setup error (including torch or triton
    missing from the benchmark's interpreter, a problem too large for the memory cap, refused
    before it runs, and a harness error: kernelscope failed before reading the problem's files,
    no verdict); 4 a resource cap
    stopped the run (out of memory, processes, output); 130 interrupted (Ctrl-C). With
    --candidates, the worst of the candidates' statuses: 130, 2, then 4, then 3; a Ctrl-C
    there still reports the candidates that finished, the others as interrupted.
    """
    if mode not in ("auto", "gpu", "interpreter"):
        raise typer.BadParameter("must be auto, gpu or interpreter", param_hint="--mode")
    if precision is not None and precision not in PRECISIONS:
        raise typer.BadParameter(f"must be one of {', '.join(PRECISIONS)}", param_hint="--precision")
    try:
        sizes = parse_problem_sizes(problem_size or [])
    except SizeError as exc:
        message = str(exc).removeprefix("--problem-size ")  # click names the option itself
        raise typer.BadParameter(message, param_hint="--problem-size") from None
    request = BenchRequest(
        workspace=workspace,
        candidate=candidate,
        baseline=baseline,
        reference=reference,
        entry=entry,
        mode=mode,
        python=python,
        timeout_s=timeout,
        memory_limit_mb=memory_limit_mb,
        seeds=seeds,
        gate_command=gate_command,
        problem_sizes=sizes,
        precision=precision,
        extra_args=[
            *(["--rep-ms", str(rep_ms)] if rep_ms else []),
            *(["--warmup-ms", str(warmup_ms)] if warmup_ms is not None else []),
            *(["--cuda-graph"] if cuda_graph else []),
            *(["--rounds", str(rounds)] if rounds else []),
            *([] if static_rules else ["--no-static-rules"]),
        ],
    )
    try:
        from kernelscope.daemon.engine.workspace.discovery import require_workspace

        # the files it reads: kernel.py, unless the candidates are named
        request.workspace = require_workspace(workspace, "folder" if candidate or candidates else "kernel")
        _bench(request, json_out, candidates, more_candidates, executor, address, config_groups, trace)
    except KernelscopeError as exc:
        if not json_out:
            raise  # main prints it and exits with its status
        output.print_json(_setup_error_result(request, str(exc)))
        raise typer.Exit(EXIT_SETUP) from None


def _bench(
    request: BenchRequest,
    json_out: bool,
    candidates: list[Path] | None,
    more_candidates: list[Path] | None,
    executor: str,
    address: str | None,
    config_groups: int,
    trace: Path | None = None,
) -> None:
    if trace is not None and (candidates or more_candidates):
        raise typer.BadParameter("takes one candidate's result, not --candidates", param_hint="--trace")
    if candidates or more_candidates:
        paths = [*(candidates or []), *(more_candidates or [])]
        _bench_many(request, paths, executor, address, json_out, config_groups)
        return
    if more_candidates is not None and not candidates:
        raise typer.BadParameter("extra arguments need --candidates", param_hint="CANDIDATES")
    if config_groups > 1:
        raise typer.BadParameter("configuration groups need --candidates", param_hint="--config-groups")
    result = run_benchmark(request)
    if trace is not None:
        from kernelscope.daemon.engine.store.traces import write_bench_traces

        write_bench_traces(trace, result, request.workspace)
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        print_result(result)
    raise typer.Exit(exit_status(result))


def _bench_many(
    request: BenchRequest,
    paths: list[Path],
    executor: str,
    address: str | None,
    json_out: bool,
    config_groups: int,
) -> None:
    from kernelscope.daemon.engine.run.executors import make_executor
    from kernelscope.daemon.engine.run.fanout import bench_candidates, expand_candidates

    report = bench_candidates(
        request, expand_candidates(paths), make_executor(executor, address), executor, config_groups
    )
    if json_out:
        print(report.model_dump_json(indent=2))
    else:
        output.print_table(
            f"{counted(len(report.ranking), 'candidate')} ({report.executor}, {report.wall_s:.1f} s)",
            ["rank", "candidate", "verdict", "score", "mode", "failure"],
            [
                [
                    str(r.rank),
                    r.candidate,
                    verdict_word(r.result),
                    output.fmt(r.score, ".3f", "x"),
                    r.result.mode,
                    (r.result.error.kind + ": " + r.result.error.message[:80]) if r.result.error else "",
                ]
                for r in report.ranking
            ],
        )
        for message in report.messages:
            output.warn(message)
    status = worst_exit_status([r.result for r in report.ranking])
    if status == EXIT_INTERRUPTED:
        # A Ctrl-C stopped some candidates and the report says so. Not typer.Exit(130): typer
        # returns 130 for a Ctrl-C it caught as well, where main prints the interrupted
        # document; a SystemExit passes typer by, so the report stays the one document.
        raise SystemExit(status)
    raise typer.Exit(status)


def baseline_name(result: BenchResult) -> str:
    """What the speedups are against, said plainly: the reference is the problem's own
    (PyTorch) implementation, not a recorded version."""
    if result.baseline == "reference":
        named = f"{result.reference}, " if result.reference else ""
        return f"the reference implementation ({named}not a recorded version)"
    if result.baseline_version:
        return f"{result.baseline_version} ({result.baseline})"
    return result.baseline


def print_result(result: BenchResult) -> None:
    from kernelscope.protocol.record_rules import format_score

    verdict = verdict_headline(result)
    versus = baseline_name(result)
    output.info(f"{verdict}  mode={result.mode}  candidate={result.candidate}")
    output.info(f"baseline: {versus}")
    gpu = result.mode == "gpu"  # interpreter timings make no bandwidth or throughput figures
    partial = result.shrunk()
    if result.configs:
        output.print_table(
            None,
            [
                "config (size run)",
                "gate",
                "rel_err",
                "candidate ms",
                "baseline ms",
                "speedup vs baseline",
                "GB/s",
                "TFLOP/s",
                "% peak",
            ],
            [
                [
                    c.name + (f" ({shrunk}, interpreter)" if (shrunk := c.shrunk_text()) else ""),
                    "pass" if c.passed else "FAIL",
                    output.fmt(c.rel_err, ".2e"),
                    output.fmt(c.candidate_ms, ".4f"),
                    output.fmt(c.baseline_ms, ".4f"),
                    "-" if c.speedup is None else format_score(c.speedup),
                    output.fmt(c.gbps if gpu and c.gbps else None, ".1f"),
                    output.fmt(c.tflops if gpu and c.tflops else None, ".2f"),
                    output.fmt(_peak(c) if gpu else None, ".1f", "%"),
                ]
                for c in result.configs
            ],
        )
    if result.score is not None:
        uncertain = result.score_ci is not None and result.score_ci[0] < 1.0 < result.score_ci[1]
        output.info(
            f"score (geometric-mean speedup vs {versus}): {format_score(result.score, ci=result.score_ci)}"
            + ("  NOISY: the interval holds 1.0, no verdict" if uncertain else "")
            + ("" if gpu else "  (interpreter: correctness run, not GPU timings)")
        )
    if partial:
        output.warn("partial result: configurations ran smaller than stated: " + "; ".join(partial))
    for config in result.configs:  # where the evaluator's rule and kernelscope's disagree: both
        upstream = config.upstream
        if upstream is not None and upstream.passed != upstream.kernelscope_passed:
            said = "passes" if upstream.passed else "fails"
            ours = "passes" if upstream.kernelscope_passed else "fails"
            output.warn(
                f"{config.name}: SOL-ExecBench's rule {said} it (matched {upstream.matched_ratio:.4f}, "
                f"required {upstream.required_matched_ratio:g}) and decides; kernelscope's every-element "
                f"rule {ours} it" + (f" ({upstream.note})" if upstream.note else "")
            )
    if result.error:
        output.error(f"[{result.error.kind}] {result.error.message}")
        if shows_traceback(result.error) and result.error.traceback:  # its last frames: for a report
            output.stderr.print(result.error.traceback.rstrip(), markup=False)
        if result.error.stderr_tail:
            output.stderr.print(result.error.stderr_tail[-1500:], markup=False)
    for message in result.messages:
        output.warn(message)


def _peak(config: Any) -> float | None:
    fraction = config.bandwidth_fraction or config.tflops_fraction
    return 100 * fraction if fraction else None
