"""The benchmark runner: `python -m kernelscope.kernels.runner ...`, always in a child process.

It imports torch, triton and the user's kernel, so it never runs inside the daemon: the
launcher (`kernelscope.daemon.engine.run.bench`) starts it with the workspace's interpreter,
a timeout and a memory cap, and reads the one JSON `BenchResult` it writes to `--output`.
Anything the kernel does wrong becomes a classified failure in that result; if the process
itself dies (segfault, abort, timeout, OOM kill) the launcher classifies that.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope.kernels.fault_origin import ProblemCode, before_the_problem, error_of, unfinished
from kernelscope.kernels.harness_imports import import_torch, triton_version
from kernelscope.kernels.result_seal import ResultSeal

if TYPE_CHECKING:
    from kernelscope.protocol.bench import BenchMode, BenchStatus, ErrorKind
    from kernelscope.protocol.stats import Verdict


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    from kernelscope.protocol.bench import timing_ms

    parser = argparse.ArgumentParser(prog="python -m kernelscope.kernels.runner")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, required=True, help="kernel file to measure")
    parser.add_argument("--baseline", default="reference", help="'reference' or a kernel file")
    parser.add_argument("--reference", type=Path, default=None, help="default: WORKSPACE/reference.py")
    parser.add_argument("--parent", type=Path, default=None, help="also time the parent version's kernel")
    parser.add_argument("--entry", default="kernel_fn")
    parser.add_argument("--mode", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--seeds", type=int, default=None, help="default: the adapter's correctness_trials")
    parser.add_argument("--rel-err", type=float, default=None, help="README correctness threshold")
    parser.add_argument("--peak-gbps", type=float, default=None)
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--warmup-ms", type=timing_ms)  # None: not asked for, kernels/timing.py's default
    parser.add_argument("--rep-ms", type=timing_ms)
    parser.add_argument("--rounds", type=int, default=2, help="ABBA rounds per configuration")
    parser.add_argument("--no-static-rules", action="store_true", help="run even if a static rule fires")
    parser.add_argument("--interpreter-reps", type=int, default=3)
    parser.add_argument("--cuda-graph", action="store_true")
    parser.add_argument("--noisy-threshold", type=float, default=None, help="default: 0.05")
    parser.add_argument("--config", action="append", default=None, help="only these config names")
    parser.add_argument(
        "--config-group",
        default=None,
        metavar="I/N",
        help="only configurations I, I+N, I+2N... (0-based): one of N tasks splitting a run",
    )
    parser.add_argument(
        "--keep-samples",
        action="store_true",
        help="put every timing sample in the result (to merge the groups of a split run)",
    )
    parser.add_argument("--output", default="-", help="file for the JSON result ('-': stdout)")
    parser.add_argument(
        "--problem-size",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set an integer constant of the reference module (KernelBench's batch_size, dim...)",
    )
    parser.add_argument(
        "--precision", choices=["fp32", "fp16", "bf16"], default=None, help="KernelBench's precision"
    )
    parser.add_argument(
        "--adapter",
        default=None,
        metavar="MODULE:CLASS",
        help="the adapter that reads the problem (default: the one protocol.kinds names for the workspace)",
    )
    parser.add_argument(
        "--memory-cap-mb",
        type=int,
        default=None,
        help="the launcher's memory cap: a problem whose estimated footprint exceeds it is refused",
    )
    parser.add_argument("--result-key", default=None, help="the launcher's key file (read, deleted)")
    return parser.parse_args(argv)


def _select_mode(requested: str) -> BenchMode:
    """Decide gpu vs interpreter before triton is imported (TRITON_INTERPRET is read then)."""
    if requested == "interpreter" or os.environ.get("TRITON_INTERPRET") == "1":
        os.environ["TRITON_INTERPRET"] = "1"
        return "interpreter"
    torch = import_torch()

    if torch.cuda.is_available():
        return "gpu"
    if requested == "gpu":
        raise RuntimeError("--mode gpu was asked for but torch sees no CUDA device")
    os.environ["TRITON_INTERPRET"] = "1"
    return "interpreter"


def _env(mode: str) -> dict[str, Any]:
    torch = import_torch()  # torch or triton missing: a setup error (harness_imports.py)

    env: dict[str, Any] = {
        "mode": mode,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    env["triton"] = triton_version()
    if mode == "gpu":
        env["gpu"] = torch.cuda.get_device_name()
        props = torch.cuda.get_device_properties(0)
        env["gpu_memory_gb"] = round(props.total_memory / 2**30, 1)
        env["compute_capability"] = f"{props.major}.{props.minor}"
        try:
            import subprocess

            env["driver"] = (
                subprocess.run(
                    ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                .stdout.strip()
                .splitlines()[0]
            )
        except Exception:
            env["driver"] = None
    else:
        env["cpu_count"] = os.cpu_count()
    return env


PROGRESS_MARKER = "@@kernelscope-progress "


def _progress(done: int, total: int) -> None:
    """A line the launcher picks out of the child's output to report `done/total` configs."""
    print(f"{PROGRESS_MARKER}{json.dumps({'done': done, 'total': total})}", flush=True)


def _sync(mode: str) -> None:
    if mode == "gpu":
        import torch

        torch.cuda.synchronize()


class _Runner:
    def __init__(
        self,
        args: argparse.Namespace,
        mode: str,
        guard: Any,
        parent_fn: Any | None = None,
        framework_ok: bool = False,
    ) -> None:
        from kernelscope.kernels.timing import Timer

        self.args = args
        self.mode = mode
        self.device = "cuda" if mode == "gpu" else "cpu"
        self.parent_fn = parent_fn
        self.guard = guard
        self.framework_ok = framework_ok
        self.code = ProblemCode.of(args)  # whose an exception is (fault_origin.py)
        self.gate_inputs: list[list[str]] = []  # digests of the draws the gate found the candidate right on
        # The exception the adapter's make_inputs raised before this configuration's first call
        # of the candidate: the one a problem's declared `unsupported` is taken from (fault_origin)
        self.input_error: BaseException | None = None
        self.candidate_called = False
        self.timer = Timer(mode, guard, args.interpreter_reps, args.warmup_ms, args.rep_ms, args.cuda_graph)

    # -- timing ---------------------------------------------------------------------------

    def time_ab(
        self, config: dict[str, Any], problem: Any, result: Any, parent: Any | None = None
    ) -> tuple[list[float], list[float], list[float], tuple[list[float], list[float]]]:
        """Baseline (A), candidate (B) and optionally the parent (P), interleaved A B P P B A
        per round (ABBA without a parent) so machine drift cancels, on one input set that is
        perturbed before every call; the candidate's calls are checked (kernels.timed_checks). Also
        returns the A/A pair: the first and the last A phase of every round, whose ratio is
        the run's own noise band."""
        import random

        from kernelscope.kernels.gate import as_tensor_list, check_outputs, digest
        from kernelscope.kernels.timed_checks import PerturbOnly, TimedCallChecks

        inputs = problem.make_inputs(config, 0, self.device)
        baseline, candidate = problem.baseline(config), problem.candidate(config)
        self.timer.new_configuration()  # the same functions, another size: estimated again
        tolerance = self._tolerance(problem, config)
        checks = TimedCallChecks(
            inputs,
            reference=lambda xs: as_tensor_list(problem.reference(config, xs), "the reference"),
            fresh_inputs=lambda seed: problem.make_inputs(config, seed, self.device),
            candidate=candidate,
            compare=lambda outs, refs, xs: check_outputs(
                outs, refs, xs, tolerance, self.args.rel_err, layout=problem.layout_checked
            ),
            outputs_of=lambda value: as_tensor_list(value, "the candidate"),
            digest=digest,
            guard=self.guard,
            rng=random.Random(f"timing:{config['name']}"),
            calls=self.args.interpreter_reps if self.mode != "gpu" else 10,
            sync=lambda: _sync(self.mode),
            require_launches=not self.framework_ok,
            inputs_in_result=problem.inputs_in_result,
            domain_declared=problem.domain_declared(),
            checked=self.gate_inputs,  # the timed draw (seed 0) among them: evidence of laziness
        )
        others = PerturbOnly(checks)
        base, cand, par = list[float](), list[float](), list[float]()
        first_a, last_a, kernel_ms = list[float](), list[float](), list[float]()
        launches: list[int] = []
        counted = not self.framework_ok

        def phase(fn: Any) -> list[float]:  # the baseline's or parent's, on unperturbed inputs if need be
            return checks.unperturbed_on_error(lambda: self.timer.run(fn, inputs, others)).samples_ms

        for _ in range(max(1, self.args.rounds)):
            samples = phase(baseline)
            base += samples
            first_a += samples
            timed = self.timer.run(candidate, inputs, checks, counted)
            cand += timed.samples_ms
            kernel_ms += timed.kernel_ms
            launches += timed.launches
            if parent is not None:
                par += phase(parent)
                par += phase(parent)
            timed = self.timer.run(candidate, inputs, checks, counted)
            cand += timed.samples_ms
            kernel_ms += timed.kernel_ms
            launches += timed.launches
            samples = phase(baseline)
            base += samples
            last_a += samples
        if kernel_ms:
            result.candidate_kernel_ms = statistics.median(kernel_ms)
        if launches:
            result.timed_launches = [min(launches), max(launches)]
        result.timed_outputs_checked = checks.checked_calls
        result.notes = checks.notes or None
        return base, cand, par, (first_a, last_a)

    # -- one configuration ----------------------------------------------------------------

    def _tolerance(self, problem: Any, config: dict[str, Any]) -> dict[str, float] | None:
        """The reference module's tolerance; without one, the README's threshold (applied by
        the gate); without that either, the contract's own default (KernelBench's per
        precision), else None for the gate's per-dtype defaults."""
        declared = problem.tolerance(config)
        if declared is None and self.args.rel_err is None:
            default = getattr(problem, "default_tolerance", None)
            return default(config) if default is not None else None
        return declared

    def _reference_first(self, problem: Any, config: dict[str, Any], seed: int) -> Any:
        """The reference's run on the seed's inputs, and the inputs the candidate gets (the same
        draw made again where the reference changed one: kernels/input_changes.py)."""
        from kernelscope.kernels.gate import as_tensor_list
        from kernelscope.kernels.input_changes import reference_first

        def make_inputs() -> Any:
            try:
                return problem.make_inputs(config, seed, self.device)
            except Exception as exc:
                if not self.candidate_called:
                    self.input_error = exc
                raise

        return reference_first(
            make_inputs,
            lambda xs: as_tensor_list(problem.reference(config, xs), "the reference"),
            problem.inputs_in_result,
        )

    def _checked_calls(self, config: dict[str, Any], problem: Any, result: Any) -> tuple[float, float, float]:
        """The gate over every seed, keeping one input set and digests (not every seed's
        outputs) at a time. Raises GateFailure."""
        from kernelscope.kernels.gate import GateFailure, as_tensor_list, check_outputs, digest
        from kernelscope.kernels.input_changes import check_inputs

        candidate = problem.candidate(config)
        tolerance = self._tolerance(problem, config)
        seen: list[tuple[str, str]] = []
        worst = (0.0, 0.0, 0.0)
        rules = (tolerance, self.args.rel_err)
        self.gate_inputs = []
        for trial, seed in enumerate(result.seeds, 1):
            run = self._reference_first(problem, config, seed)
            inputs, references = run.inputs, run.references
            self.candidate_called = True  # an input error from here on may be the kernel's doing
            with self.guard.launches.counting(driver=True) as launches:
                raw = candidate(*inputs)
                _sync(self.mode)
            found = self.guard.check(f"after the checked call with seed {seed}")
            if found:
                raise GateFailure("cheat", found)
            result.launches_per_call = launches.count
            outputs = as_tensor_list(raw, "the candidate")
            check_inputs(run, f"(seed {seed})", lambda ins, refs: check_outputs(ins, refs, (), *rules))
            pair = (digest(outputs), digest(references))
            if any(out == pair[0] and ref != pair[1] for out, ref in seen):
                raise GateFailure(
                    "cheat",
                    f"outputs for seed {seed} equal those of an earlier seed although the "
                    "inputs differ (a cached answer?)",
                )
            seen.append(pair)
            verdicts: dict[str, Any] = {}
            try:
                views, layout = run.outputs_may_not_view(), problem.layout_checked
                max_abs, max_rel, rel_err, rule = check_outputs(
                    outputs, references, views, *rules, verdicts, layout
                )
            except GateFailure as failure:  # which draw: a bug on one input is found, and rerun, by it
                failure.message += f" (trial {trial} of {len(result.seeds)}, seed {seed})"
                raise
            finally:
                self._keep_upstream(result, verdicts)
            if launches.count == 0 and not self.framework_ok:  # a right answer, but not Triton's
                raise GateFailure(
                    "no_kernel",
                    f"the candidate launched no Triton kernel (seed {seed}): no Triton, no score (a "
                    "deliberate framework baseline says so with a `# kernelscope: framework-baseline` line; "
                    "a SOL-ExecBench solution.json by languages without triton)",
                )
            result.tolerance = rule
            worst = (max(worst[0], max_abs), max(worst[1], max_rel), max(worst[2], rel_err))
            self.gate_inputs.append(run.before)
            del raw, outputs, references, inputs, run
        self._second_distribution(config, problem, candidate, tolerance, result)
        if not self.framework_ok:
            self._launches_matter(config, problem, candidate, tolerance)
        return worst

    def _second_distribution(
        self, config: dict[str, Any], problem: Any, candidate: Any, tolerance: Any, result: Any
    ) -> None:
        """Right on the problem's own inputs: once more on signed heavy-tailed ones."""
        from kernelscope.kernels.second_inputs import check_second_distribution

        result.second_distribution = check_second_distribution(
            problem, config, candidate, tolerance, self.args.rel_err, self.device, lambda: _sync(self.mode)
        )

    @staticmethod
    def _keep_upstream(result: Any, verdicts: dict[str, Any]) -> None:
        """Upstream's verdict and kernelscope's, worst seed kept (a SOL workspace's rule)."""
        from kernelscope.protocol.bench import UpstreamVerdict

        if not verdicts:
            return
        if result.upstream is not None:
            kept = result.upstream
            verdicts.update(
                passed=kept.passed and verdicts["passed"],
                kernelscope_passed=kept.kernelscope_passed and verdicts["kernelscope_passed"],
                matched_ratio=min(kept.matched_ratio, verdicts["matched_ratio"]),
                note=verdicts.get("note") or kept.note,
            )
        result.upstream = UpstreamVerdict(**verdicts)

    def _launches_matter(self, config: dict[str, Any], problem: Any, candidate: Any, tolerance: Any) -> None:
        """Run the candidate once with every Triton launch skipped and uninitialized memory
        poisoned (NaN): if its output is still right, framework ops produced it."""
        import torch

        from kernelscope.kernels.gate import GateFailure, as_tensor_list, check_outputs
        from kernelscope.kernels.input_changes import check_call

        run = self._reference_first(problem, config, 0)
        deterministic = torch.are_deterministic_algorithms_enabled()
        warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
        fill = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
        try:
            with self.guard.launches.counting(neutralize=True):
                raw = candidate(*run.inputs)
                _sync(self.mode)
            check_call(  # (the gate's rule: kernels/input_changes.py)
                run,
                as_tensor_list(raw, "the candidate"),
                "(launches skipped)",
                lambda outs, refs, views: check_outputs(
                    outs, refs, views, tolerance, self.args.rel_err, layout=problem.layout_checked
                ),
            )
        except Exception:
            return  # wrong, or broken, without its launches: they do the work
        finally:
            torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
            torch.utils.deterministic.fill_uninitialized_memory = fill  # type: ignore[attr-defined]
        raise GateFailure(
            "no_kernel",
            "the output is right even with every Triton launch skipped: framework ops produce it "
            "and the Triton kernels do nothing",
        )

    def _interpreter_limit(self, config: dict[str, Any], result: Any) -> None:
        """A bf16 configuration that failed under the interpreter, in a kernel doing what the
        interpreter's bf16 faults could break: `interpreter_limit`, not the kernel's verdict."""
        from kernelscope.kernels import interpreter_limits

        error = result.error
        wrong = ("wrong_result", "wrong_off_distribution", "exception", "cheat")
        if (
            self.mode == "gpu"
            or error is None
            or error.kind not in wrong
            or not interpreter_limits.uses_bf16(config)
        ):
            return
        arithmetic, casts = interpreter_limits.bf16_faults(self.args.candidate)
        if arithmetic:
            error.kind = "interpreter_limit"
            error.message = (
                f"{error.message} -- not a verdict on the kernel: it runs bfloat16 under the CPU "
                f"interpreter and {'; '.join(arithmetic[:3])}; check it on a GPU"
            )
        elif casts:
            error.message = (
                f"{error.message} (under the CPU interpreter {casts[0]}: at most one bfloat16 step, "
                "2^-7 relative, of this error can be the interpreter's)"
            )

    def run_config(self, config: dict[str, Any], problem: Any) -> tuple[Any, Any]:
        """The config's result and, when it passed the gate and its timed calls, its timing
        samples ((baseline, candidate), (first A, last A))."""
        from kernelscope.kernels.gate import GateFailure
        from kernelscope.kernels.timing import TimedCheckFailure
        from kernelscope.protocol.bench import BenchError, ConfigResult, is_verdict_kind
        from kernelscope.protocol.stats import bootstrap_ratio_ci

        name = str(config["name"])
        params = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool)) and k != "name"}
        seeds = problem.correctness_seeds(self.args.seeds or problem.correctness_trials)
        result = ConfigResult(name=name, params=params, passed=False, seeds=seeds)
        result.shrunk_for_interpreter = config.get("shrunk_for_interpreter")
        self.input_error, self.candidate_called = None, False
        try:
            worst = self._checked_calls(config, problem, result)
            base, cand, par, aa = self.time_ab(config, problem, result, self.parent_fn)
        except Exception as exc:  # the kernel's, whoever raised it (fault_origin.py)
            if isinstance(exc, (GateFailure, TimedCheckFailure)) and is_verdict_kind(exc.kind):
                result.error = BenchError(kind=exc.kind, message=f"{name}: {exc.message}", config=name)
            else:  # a no-verdict kind is no check's: the kernel raised the class itself
                result.error = error_of(exc, self.code, name, declared=exc is self.input_error)
            self._interpreter_limit(config, result)
            return result, None
        result.passed = True
        result.max_abs_err, result.max_rel_err, result.rel_err = worst
        result.baseline_ms, result.candidate_ms = statistics.median(base), statistics.median(cand)
        if par:
            result.parent_ms = statistics.median(par)
            result.speedup_vs_parent = result.parent_ms / result.candidate_ms
        result.baseline_samples, result.candidate_samples = len(base), len(cand)
        if self.args.keep_samples:
            result.baseline_times_ms, result.candidate_times_ms = base, cand
        result.speedup = result.baseline_ms / result.candidate_ms
        result.speedup_ci = bootstrap_ratio_ci(base, cand)
        seconds = result.candidate_ms / 1000.0
        moved, flops = problem.bytes_moved(config), problem.flops(config)
        if moved:
            result.gbps = moved / seconds / 1e9
            if self.args.peak_gbps:
                result.bandwidth_fraction = result.gbps / self.args.peak_gbps
        if flops:
            result.tflops = flops / seconds / 1e12
            if self.args.peak_tflops:
                result.tflops_fraction = result.tflops / self.args.peak_tflops
        return result, ((base, cand), aa)


def run(args: argparse.Namespace) -> Any:
    """The run's result. An exception before the problem's files are read (the run's settings)
    is kernelscope's (`harness_error`, no verdict); one after, the kernel's (fault_origin.py)."""
    try:  # nothing of the problem's is read in here: the one thing a kernel cannot influence
        from kernelscope.protocol.bench import GROUP_PREFIX, BenchError, BenchResult

        started = time.perf_counter()
        workspace = args.workspace.resolve()
        reference_path = (args.reference or workspace / "reference.py").resolve()
        baseline_path = None if args.baseline == "reference" else Path(args.baseline).resolve()
        candidate_path = args.candidate.resolve()
        common = {
            "workspace": str(workspace),
            "candidate": str(candidate_path),
            "baseline": "reference" if baseline_path is None else str(baseline_path),
            "entry_point": args.entry,
        }

        try:
            mode = _select_mode(args.mode)
            env = _env(mode)
        except RuntimeError as exc:  # no GPU where one was asked for; harness_imports.MissingLibrary
            return BenchResult(
                status="error",
                passed=False,
                mode="interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "gpu",
                error=BenchError(kind="setup", message=str(exc)),
                **common,
            )

        def failure(
            kind: ErrorKind, message: str, status: BenchStatus = "error", tb: str | None = None
        ) -> BenchResult:
            return BenchResult(
                status=status,
                passed=False,
                mode=mode,
                env=env,
                error=BenchError(kind=kind, message=message, traceback=tb),
                duration_s=time.perf_counter() - started,
                **common,
            )

        from kernelscope.kernels import interpreter_limits
        from kernelscope.kernels.adapters import ProblemError, load_problem
        from kernelscope.kernels.adapters.kernelbench import KernelBenchProblem
        from kernelscope.kernels.sizing import check_memory
        from kernelscope.protocol.sizes import SizeError, parse_problem_sizes

        try:
            sizes = parse_problem_sizes(args.problem_size)
        except SizeError as exc:
            return failure("setup", str(exc))
    except Exception as exc:
        return before_the_problem(args, exc)
    if mode == "interpreter":
        problems = interpreter_limits.kernel_problems([p for p in (candidate_path, baseline_path) if p])
        if problems:
            return failure("unsupported", "; ".join(problems), status="unsupported")
    from kernelscope.kernels.static_gate import static_gate  # before anything of it runs

    refused, static_warnings = static_gate(candidate_path, workspace, reference_path, args.adapter)
    if refused and not args.no_static_rules:
        return failure("static_check", refused, status="gate_failed")
    from kernelscope.kernels import fault_origin, gate, integrity, result_seal, timed_checks, timing
    from kernelscope.protocol import stats

    # Watches set up before kernel.py is imported: its import-time patches, threads, streams too
    harness = [gate, stats, timing, timed_checks, integrity, result_seal, fault_origin, sys.modules[__name__]]
    guard = integrity.Guard(harness)
    try:
        problem = load_problem(
            reference_path,
            candidate_path,
            baseline_path,
            args.entry,
            workspace=workspace,
            sizes=sizes,
            precision=args.precision,
            adapter=args.adapter,
        )
    except ProblemError as exc:
        return failure("setup", str(exc))
    except BaseException as exc:  # the kernel (or reference) does not import
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exc(limit=8)
        return failure("compile", f"failed to import: {type(exc).__name__}: {exc}", tb=tb)
    common["entry_point"] = getattr(problem, "entry_label", None) or args.entry  # what was called
    found = guard.check("after kernel.py was imported")
    if found:
        return failure("cheat", found, status="gate_failed")

    # Before any of the problem's tensors exists: a problem too large for the memory cap is
    # refused in seconds with its size, not killed by the cap a minute later.
    timing_sets = 3 if args.parent is not None else 2
    seeds = args.seeds or problem.correctness_trials  # KernelBench 5, SOL-ExecBench 10, else 3
    too_large, notes = check_memory(problem, mode, seeds, timing_sets, args.memory_cap_mb)
    if too_large:
        return failure("setup", too_large)
    if isinstance(problem, KernelBenchProblem):
        problem.prepare("cuda" if mode == "gpu" else "cpu")
    configs = problem.configs(interpreter=mode == "interpreter")
    if args.config:
        configs = [c for c in configs if c["name"] in args.config]
        if not configs:
            return failure("setup", f"no configuration named {', '.join(args.config)}")
    if args.config_group:
        try:
            index, count = (int(part) for part in args.config_group.split("/"))
            if not 0 <= index < count:
                raise ValueError
        except ValueError:
            return failure("setup", f"--config-group must be I/N with 0 <= I < N, not {args.config_group!r}")
        configs = configs[index::count]
        if not configs:  # more groups than configurations: this one has nothing to do
            return BenchResult(
                status="ok",
                passed=True,
                mode=mode,
                env=env,
                messages=[f"{GROUP_PREFIX}{index}/{count} is empty"],
                duration_s=time.perf_counter() - started,
                **common,
            )
    if mode == "interpreter":
        problems = interpreter_limits.config_problems(configs)
        if problems:
            return failure("unsupported", "; ".join(problems), status="unsupported")

    parent_fn = None
    common_warning: str | None = None
    if args.parent is not None:
        try:
            from kernelscope.kernels.adapters.base import load_module

            parent_fn = getattr(load_module(args.parent.resolve(), "parent"), args.entry)
        except BaseException as exc:  # a parent that no longer imports is reported, not fatal
            if isinstance(exc, KeyboardInterrupt):
                raise
            parent_fn = None
            common_warning = (
                f"the parent kernel {args.parent} could not be loaded: {type(exc).__name__}: {exc}"
            )
        else:
            common_warning = None
    else:
        common_warning = None
    from kernelscope.kernels.static_gate import framework  # the mark, or the workspace's solution

    framework_ok = framework(candidate_path, workspace, reference_path, args.adapter)
    runner = _Runner(args, mode, guard, parent_fn, framework_ok is not None)
    from kernelscope.kernels.problem_lint import lint_for_result  # the reference only, before any candidate

    lint, lint_messages = lint_for_result(
        problem, configs[0], runner.device, runner._tolerance(problem, configs[0]), args.rel_err
    )
    outcomes = []
    _progress(0, len(configs))
    for index, config in enumerate(configs):
        outcomes.append(runner.run_config(config, problem))
        _progress(index + 1, len(configs))
    result = _summarise(outcomes, mode, env, common, started, args)
    result.messages.extend([*static_warnings, *lint_messages])
    result.problem_lint = lint
    if parent_fn is not None:
        result.parent = str(args.parent.resolve())
        ratios = [c.speedup_vs_parent for c in result.configs if c.speedup_vs_parent]
        if result.passed and ratios and len(ratios) == len(result.configs):
            from kernelscope.protocol.stats import geomean

            result.score_vs_parent = geomean(ratios)
    if common_warning:
        result.messages.append(common_warning)
    if framework_ok:
        result.messages.append(f"{framework_ok}: Triton launches were not required")
    result.messages.extend(notes)
    return result


def _summarise(
    outcomes: list[tuple[Any, Any]],
    mode: BenchMode,
    env: dict[str, Any],
    common: dict[str, Any],
    started: float,
    args: argparse.Namespace,
) -> Any:
    from kernelscope.protocol.bench import NO_VERDICT_KINDS, RESOURCE_KINDS, BenchResult
    from kernelscope.protocol.record_rules import check_before_trusting
    from kernelscope.protocol.stats import (
        NOISY_THRESHOLD,
        bootstrap_geomean_ci,
        noisy_message,
        score_summary,
        timing_messages,
        verdict_of,
    )

    results = [result for result, _ in outcomes]
    passed = all(r.passed for r in results)
    comparable = mode != "interpreter"
    messages = timing_messages(mode, args.cuda_graph, (args.warmup_ms, args.rep_ms))
    score = score_ci = noise_band = None
    verdict: Verdict | None = None
    noisy = False
    if passed and results:
        samples = [pair for pair, _ in (timing for _, timing in outcomes if timing is not None)]
        score, score_ci, noisy = score_summary(
            [r.speedup for r in results],
            [r.speedup_ci for r in results],
            samples,
            NOISY_THRESHOLD if args.noisy_threshold is None else args.noisy_threshold,
        )
        if noisy and comparable:  # interpreter timings are no figures: their noise is no advice
            messages.append(noisy_message(score_ci))
        aa = [pair for _, pair in (timing for _, timing in outcomes if timing is not None)]
        if aa and all(first and last for first, last in aa):
            noise_band = bootstrap_geomean_ci(aa)
            verdict = verdict_of(score, score_ci, noise_band) if comparable else "not comparable"
            if verdict == "no measurable change":
                messages.append(
                    f"no measurable change: the score {score:.3f}x lies within this run's own A/A noise "
                    f"band {noise_band[0]:.3f}-{noise_band[1]:.3f} (the baseline timed against itself)"
                )
    suspicious = check_before_trusting(score) if comparable and args.baseline == "reference" else None
    if suspicious:
        messages.append(suspicious)
    for result in results:
        for note in result.notes or []:
            if note not in messages:
                messages.append(note)
    errors = [r.error for r in results if r.error]  # a verdict on one configuration before no verdict
    first_error = next((e for e in errors if e.kind not in NO_VERDICT_KINDS | RESOURCE_KINDS), None)
    first_error = first_error or next(iter(errors), None)
    failed = [r for r in results if not r.passed]
    unsupported = bool(failed) and all(
        r.error and r.error.kind in ("unsupported", "interpreter_limit") for r in failed
    )
    return BenchResult(
        status="ok" if passed else ("unsupported" if unsupported else "gate_failed"),
        passed=passed,
        mode=mode,
        configs=results,
        score=score,
        score_ci=score_ci,
        noisy=noisy,
        noise_band=noise_band,
        verdict=verdict,
        comparable=comparable,
        suspicious=suspicious,
        error=first_error,
        messages=messages,
        env=env,
        duration_s=time.perf_counter() - started,
        **common,
    )


def _write(result: Any, destination: str) -> None:
    text = result.model_dump_json(indent=2)
    if destination == "-":
        print(text)
        return
    path = Path(destination)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".bench-")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(temp, path)


def _return_freed_memory() -> None:
    """Large blocks straight from mmap (and freed back to the system): with glibc's default
    dynamic threshold, a freed 64 MB tensor raises the threshold and later ones come from the
    heap, which fragments and keeps its high-water mark resident. The harness allocates and
    frees input-sized tensors many times; its peak must reflect what is alive, not the heap."""
    import contextlib
    import ctypes
    import ctypes.util

    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD


def main(argv: list[str] | None = None) -> int:
    _return_freed_memory()
    args = _parse_args(argv)
    seal = ResultSeal.take(args.result_key)  # before the candidate is imported (result_seal.py)
    try:
        result = run(args)
    except Exception as exc:  # outside any configuration, after the import began: the kernel's
        result = unfinished(args, exc)
    _write(result, args.output)
    seal.sign(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
