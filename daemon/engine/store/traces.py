"""Benchmark results in the field's trace format: FlashInfer-Bench's `Trace`, which SOL-ExecBench
shares (flashinfer_bench/data/trace.py 0.1.2; SOL-ExecBench src/sol_execbench/core/data/trace.py
and docs/trace.md). Written by `kernelscope bench --trace FILE`, read by `kernelscope
import-traces FILE`, so results travel between kernelscope and the leaderboards' tools.

A Trace is one JSON object per line: `definition` (a Definition's name), `workload` (`uuid`,
`axes`, `inputs`; SOL-ExecBench adds `tolerance` and `custom` inputs), `solution` (a Solution's
name) and `evaluation` (`status`, `environment` {hardware, libs}, `timestamp`, `log`,
`correctness`, `performance`). Both upstream models ignore unknown keys, and both require, by
status: PASSED has correctness and performance, INCORRECT_NUMERICAL correctness only, every
other status neither. The models here accept exactly what SOL-ExecBench's (the superset)
accepts, so any record either upstream writes imports, and kernelscope needs neither package.

Status mapping (kernelscope `error.kind` -> SOL-ExecBench status; "FlashInfer" when
FlashInfer-Bench's enum lacks it, and what is written, since `--trace` records must validate
with FlashInfer-Bench's own model):

    passed configuration        -> PASSED
    wrong_result                -> INCORRECT_NUMERICAL (NaN/Inf outputs too, with has_nan/has_inf)
    wrong_off_distribution      -> INCORRECT_NUMERICAL (wrong on a second, heavy-tailed input draw)
    wrong_layout                -> INCORRECT_SHAPE (closest: right values, wrong strides)
    wrong_result, "has shape ..." or "N outputs, the reference returns M"
                                -> INCORRECT_SHAPE      (older results: cheat, same message)
    wrong_result, "has dtype ..."
                                -> INCORRECT_DTYPE      (older results: cheat, same message)
    cheat, "NaN/Inf values"     -> INCORRECT_NUMERICAL  (older results; now wrong_result)
    cheat (any other), no_kernel, static_check
                                -> REWARD_HACK; FlashInfer: RUNTIME_ERROR
    compile                     -> COMPILE_ERROR
    timeout                     -> TIMEOUT
    exception, crash, out_of_memory, resource_limit, gate_command, and any kind added later
                                -> RUNTIME_ERROR
    setup, unsupported, worker, interpreter_limit, interrupted, harness_error
                                -> no record: no verdict on the kernel (a bad workspace, a
                                   configuration the interpreter cannot run, a dead worker,
                                   a Ctrl-C, a bug in kernelscope's harness)

kernelscope's own kind is never lost (both models ignore unknown keys, so an extra field would
be dropped by the first tool that re-serialises the record; `log` is kept by both): the first
line of `evaluation.log` is `kernelscope {json}` with `kind`, `status` (the SOL-ExecBench
status, e.g. REWARD_HACK where RUNTIME_ERROR was written), `mode`, `config`, `params`,
`candidate`, `baseline` and `commit`; the lines after it say the same for a person, then the
error message and the end of the child's stderr. The import reads that line back.

Interpreter results (`--mode interpreter`, TRITON_INTERPRET=1 on the CPU) are correctness
runs, not GPU timings. PASSED must carry a `performance` object, so such records carry the
schema's own defaults (latency_ms, reference_latency_ms and speedup_factor all 0.0: nothing
measured), `environment.hardware` is "cpu-interpreter", and the log says so; the import
gives them no score. GPU records carry the median latencies (`candidate_ms`, `baseline_ms`;
upstream writes means) and their ratio; when the baseline is a kernel file rather than the
reference, the log says `reference_latency_ms` is that kernel's.

Names. A SOL-ExecBench workspace (definition.json + workload.jsonl): `definition` is the
definition's `name`, `workload` the workload.jsonl line the configuration ran (uuid, inputs,
tolerance), with the axes that ran (the interpreter may shrink var axes; the log says which).
Its inputs are written as the line states them: a `custom` input (SOL-ExecBench only) makes a
record FlashInfer-Bench's model refuses, which is truer than renaming the input's source.
Any other workspace: `definition` is the workspace folder's name, `workload.uuid` the
configuration's name, `axes` its non-negative integer parameters, `inputs` empty (kernelscope
does not name a native problem's inputs). A run that failed before any configuration existed
(a compile error) writes one record per workload.jsonl line, or one whose uuid is
"all-configurations". `solution` is solution.json's `name` when the candidate is that
solution's source, else the candidate's file name, then `@<commit>` (the last commit that
touched the file; `+modified` when the file differs from it) when it is in git.

Import. Every line is validated first; one bad line fails the import with its line number
and nothing is written (one transaction). Each record becomes a KernelExperiment that cannot
pass for a kernelscope measurement: tags ["imported", "trace", "source:<file>"], kernels
["trace:<definition>"] (no function of kernel.py has that name, so no code lens claims it),
status done / failed / timeout, `score` the trace's speedup only for a PASSED record with GPU
timings, `env` the trace's hardware and libraries, the line itself in `raw_result`. Ids are a
hash of the record and the workspace, so importing a file twice adds nothing. Workload-only
traces (no solution, no evaluation: a workload, not a run) are counted and skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernelscope.daemon.engine import DataError, counted, load_json
from kernelscope.daemon.engine.memory.git_place import READ_ONLY_ENV, READ_ONLY_OPTIONS, git_environment
from kernelscope.daemon.engine.workspace.kinds import sol_workloads
from kernelscope.protocol import workspace_files
from kernelscope.protocol.bench import NO_VERDICT_KINDS, BenchError, BenchResult, ConfigResult
from kernelscope.protocol.experiment import SUMMARY_MAX_CHARS, KernelExperiment, utc_now_z
from kernelscope.protocol.sol_workloads import WORKLOADS

if TYPE_CHECKING:
    from kernelscope.daemon.engine.store.store import ExperimentStore

TraceStatus = Literal[
    "PASSED",
    "INVALID_REFERENCE",  # SOL-ExecBench only
    "INCORRECT_SHAPE",
    "INCORRECT_NUMERICAL",
    "INCORRECT_DTYPE",
    "RUNTIME_ERROR",
    "COMPILE_ERROR",
    "TIMEOUT",
    "REWARD_HACK",  # SOL-ExecBench only
]
# What FlashInfer-Bench 0.1.2's EvaluationStatus lacks, and the status written in its place.
FLASHINFER_FALLBACK: dict[str, str] = {"REWARD_HACK": "RUNTIME_ERROR", "INVALID_REFERENCE": "RUNTIME_ERROR"}
KIND_STATUS: dict[str, str] = {
    "wrong_result": "INCORRECT_NUMERICAL",
    "wrong_off_distribution": "INCORRECT_NUMERICAL",
    "wrong_layout": "INCORRECT_SHAPE",
    "cheat": "REWARD_HACK",
    "no_kernel": "REWARD_HACK",
    "static_check": "REWARD_HACK",
    "compile": "COMPILE_ERROR",
    "timeout": "TIMEOUT",
    "exception": "RUNTIME_ERROR",
    "crash": "RUNTIME_ERROR",
    "out_of_memory": "RUNTIME_ERROR",
    "resource_limit": "RUNTIME_ERROR",
    "gate_command": "RUNTIME_ERROR",
}
# The gate files wrong shapes, output counts and dtypes as wrong results (older results:
# cheats); upstream has statuses for them.
_CHEAT_REFINED = (
    (re.compile(r" has shape \("), "INCORRECT_SHAPE"),
    (re.compile(r" outputs, the reference returns "), "INCORRECT_SHAPE"),
    (re.compile(r" has dtype "), "INCORRECT_DTYPE"),
    (re.compile(r"NaN/Inf values"), "INCORRECT_NUMERICAL"),
)
INTERPRETER_HARDWARE = "cpu-interpreter"
ALL_CONFIGURATIONS = "all-configurations"
LOG_MARKER = "kernelscope "
_LOG_TAIL_CHARS = 4000
IMPORTED_TAGS = ("imported", "trace")

NonEmpty = Annotated[str, Field(min_length=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class InvalidTrace(DataError, ValueError):
    """A trace file that cannot be imported (unreadable, not JSON lines, a record that fails the
    schema); nothing was written. Exit status 2: the data is the problem."""


# -- the schema (SOL-ExecBench's models, which accept every FlashInfer-Bench record) ------------


class _Upstream(BaseModel):
    """Both upstreams' BaseModelWithDocstrings: pydantic's default, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore")


class RandomInput(_Upstream):
    type: Literal["random"] = "random"


class ScalarInput(_Upstream):
    type: Literal["scalar"] = "scalar"
    value: int | float | bool


class SafetensorsInput(_Upstream):
    type: Literal["safetensors"] = "safetensors"
    path: NonEmpty
    tensor_key: NonEmpty


class CustomInput(_Upstream):
    """SOL-ExecBench only: inputs made by the reference's custom_inputs_entrypoint."""

    type: Literal["custom"] = "custom"


InputSpec = Annotated[RandomInput | ScalarInput | SafetensorsInput | CustomInput, Field(discriminator="type")]


class ToleranceSpec(_Upstream):
    """SOL-ExecBench's per-workload tolerance (its defaults)."""

    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: float | None = None
    allow_negative_inf: bool = False


class TraceWorkload(_Upstream):
    axes: dict[str, NonNegativeInt]
    inputs: dict[str, InputSpec]
    uuid: NonEmpty
    tolerance: ToleranceSpec | None = None

    @model_validator(mode="after")
    def _custom_alone(self) -> TraceWorkload:
        custom = [name for name, spec in self.inputs.items() if isinstance(spec, CustomInput)]
        if custom and len(custom) != len(self.inputs):
            raise ValueError("a workload cannot have both custom and non-custom inputs")
        return self


class TraceCorrectness(_Upstream):
    max_relative_error: float = 0.0
    max_absolute_error: float = 0.0
    has_nan: bool = False
    has_inf: bool = False
    extra: dict[str, Any] | None = None

    @field_validator("max_relative_error", "max_absolute_error")
    @classmethod
    def _non_negative(cls, value: float) -> float:
        if value < 0:  # NaN passes, as in both upstreams
            raise ValueError("must be non-negative")
        return value


class TracePerformance(_Upstream):
    latency_ms: float = Field(default=0.0, ge=0.0)
    reference_latency_ms: float = Field(default=0.0, ge=0.0)
    speedup_factor: float = Field(default=0.0, ge=0.0)


class TraceEnvironment(_Upstream):
    hardware: NonEmpty
    libs: dict[str, str] = Field(default_factory=dict)


class TraceEvaluation(_Upstream):
    status: TraceStatus
    environment: TraceEnvironment
    timestamp: NonEmpty
    log: str = ""
    correctness: TraceCorrectness | None = None
    performance: TracePerformance | None = None

    @model_validator(mode="after")
    def _nullable_table(self) -> TraceEvaluation:
        """docs/trace.md's nullable table, as both upstream models enforce it."""
        wants_correctness = self.status in ("PASSED", "INCORRECT_NUMERICAL")
        wants_performance = self.status == "PASSED"
        for name, wanted, value in (
            ("correctness", wants_correctness, self.correctness),
            ("performance", wants_performance, self.performance),
        ):
            if wanted and value is None:
                raise ValueError(f"evaluation must include {name} when status is {self.status}")
            if not wanted and value is not None:
                raise ValueError(f"evaluation must not include {name} when status is {self.status}")
        return self


class Trace(_Upstream):
    definition: NonEmpty
    workload: TraceWorkload
    solution: str | None = None
    evaluation: TraceEvaluation | None = None

    def is_workload_trace(self) -> bool:
        return self.solution is None and self.evaluation is None

    def to_line(self) -> str:
        """One JSON line as SOL-ExecBench's eval driver emits it (strict JSON: no NaN)."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), allow_nan=False)


# -- kernelscope -> Trace ----------------------------------------------------------------------


def status_for(kind: str, message: str = "") -> str:
    """The SOL-ExecBench status for a kernelscope failure kind (see the module docstring)."""
    if kind in ("cheat", "wrong_result"):
        for pattern, status in _CHEAT_REFINED:
            if pattern.search(message):
                return status
    return KIND_STATUS.get(kind, "RUNTIME_ERROR")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _message_number(message: str, label: str) -> float | None:
    """`label 0.0522` in a gate message (kernels/gate.py words its failures so)."""
    found = re.search(re.escape(label) + r" ([-+0-9.eE]+|nan|inf)", message)
    try:
        return _finite(float(found.group(1))) if found else None
    except ValueError:
        return None


def _read_sol(root: Path) -> tuple[str, list[dict[str, Any]]] | None:
    """(definition name, workload.jsonl's workloads as the harness reads them) of a
    SOL-ExecBench workspace, else None; no workloads when the file is unreadable."""
    definition = root / "definition.json"
    if not (definition.is_file() and (root / WORKLOADS).is_file()):
        return None
    try:
        data = load_json(workspace_files.read_text(definition))
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    workloads, _ = sol_workloads(root)
    return (name if isinstance(name, str) and name else root.name or "workspace"), workloads or []


def _git_state(path: Path) -> tuple[str | None, bool]:
    """(the last commit that touched `path`, whether the file differs from it); (None, False)
    outside git or when git cannot tell."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(path.parent), *READ_ONLY_OPTIONS, *args],
                stdin=subprocess.DEVNULL,  # never the daemon's own stdin (the editor's)
                capture_output=True,
                text=True,
                env=git_environment(READ_ONLY_ENV),  # reads only: no index refresh
                timeout=15,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("log", "-1", "--format=%H", "--", path.name)
    if not commit:
        return None, False
    return commit, bool(git("status", "--porcelain", "--", path.name))


def solution_name(result: BenchResult, root: Path) -> tuple[str, str | None]:
    """(the Trace's `solution`, the candidate's commit or None)."""
    candidate = Path(result.candidate) if result.candidate else root / "kernel.py"
    name = candidate.name or "kernel.py"
    try:
        spec = load_json(workspace_files.read_text(root / "solution.json"))
        sources = {Path(str(s.get("path", ""))).name for s in spec.get("sources", []) if isinstance(s, dict)}
        if isinstance(spec.get("name"), str) and spec["name"] and name in sources:
            name = spec["name"]
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    commit, modified = _git_state(candidate) if candidate.is_file() else (None, False)
    if commit:
        name = f"{name}@{commit[:12]}" + ("+modified" if modified else "")
    return name, commit


def environment_of(result: BenchResult) -> TraceEnvironment:
    """What SOL-ExecBench's env_snapshot records: the device name and torch/triton/cuda."""
    env = result.env
    hardware = str(env.get("gpu") or "cuda GPU") if result.mode == "gpu" else INTERPRETER_HARDWARE
    libs = {
        key: str(env[key])
        for key in ("torch", "triton", "cuda")
        if env.get(key) and not str(env[key]).startswith("unavailable")
    }
    return TraceEnvironment(hardware=hardware, libs=libs)


def _sol_line(config: ConfigResult | None, lines: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    """The workload a configuration ran: by the adapter's `workload_index`, checked against its
    `uuid` (both read workload.jsonl by one rule, protocol.sol_workloads)."""
    if config is None:
        return lines[index] if index < len(lines) else None
    position, uuid = config.params.get("workload_index"), config.params.get("uuid")
    line = lines[position] if isinstance(position, int) and 0 <= position < len(lines) else None
    if line is not None and (uuid is None or str(line["uuid"]) == str(uuid)):
        return line
    return next((w for w in lines if str(w["uuid"]) == str(uuid)), None)


def _workload(
    config: ConfigResult | None, sol: tuple[str, list[dict[str, Any]]] | None, index: int = 0
) -> TraceWorkload:
    """The workload a configuration ran (see Names in the module docstring)."""
    line = _sol_line(config, sol[1], index) if sol is not None else None
    if line is not None:
        axes = dict(line.get("axes") or {})
        shrunk = (config.shrunk_for_interpreter if config is not None else None) or {}
        axes.update({axis: sizes[1] for axis, sizes in shrunk.items()})  # the sizes that ran
        data: dict[str, Any] = {"uuid": str(line["uuid"]), "axes": axes}
        data.update(inputs=line.get("inputs") or {}, tolerance=line.get("tolerance"))
        try:
            return TraceWorkload.model_validate(data)
        except ValidationError:
            pass  # a workload line the schema refuses: named like any other configuration
    if config is None:
        return TraceWorkload(uuid=ALL_CONFIGURATIONS, axes={}, inputs={})
    axes = {k: v for k, v in config.params.items() if type(v) is int and v >= 0}
    return TraceWorkload(uuid=config.name, axes=axes, inputs={})


def _log(
    result: BenchResult,
    config: ConfigResult | None,
    error: BenchError | None,
    status: str,
    written: str,
    commit: str | None,
) -> str:
    marker = {
        "kind": error.kind if error is not None and (config is None or not config.passed) else None,
        "status": status,
        "mode": result.mode,
        "config": config.name if config is not None else None,
        "params": config.params if config is not None else None,
        "candidate": result.candidate,
        "baseline": result.baseline,
        "commit": commit,
    }
    lines = [LOG_MARKER + json.dumps(marker, sort_keys=True)]
    if result.mode == "interpreter":
        lines.append(
            "kernelscope bench under the CPU interpreter (TRITON_INTERPRET=1): a correctness run; "
            "its timings are not GPU latencies, so performance holds the schema's zero defaults."
        )
    elif written == "PASSED":
        versus = (
            "the reference" if result.baseline == "reference" else f"the baseline kernel {result.baseline}"
        )
        lines.append(
            f"latency_ms and reference_latency_ms are medians (kernelscope ABBA timing); the reference "
            f"latency is {versus}'s."
        )
    if config is not None and (shrunk := config.shrunk_text()):
        lines.append(f"axes run smaller than the workload states (interpreter): {shrunk}")
    if status != written:
        lines.append(
            f"kernelscope classified this as {marker['kind']!r} (SOL-ExecBench: {status}); "
            f"FlashInfer-Bench's schema has no {status}, so the status written is {written}."
        )
    if error is not None:
        lines.append(f"[{error.kind}] {error.message}")
        if error.stderr_tail:
            lines.append(error.stderr_tail[-_LOG_TAIL_CHARS:])
    return "\n".join(lines)


def _evaluation(
    result: BenchResult,
    config: ConfigResult | None,
    error: BenchError | None,
    environment: TraceEnvironment,
    timestamp: str,
    commit: str | None,
) -> TraceEvaluation:
    passed = config is not None and config.passed
    status = (
        "PASSED"
        if passed
        else status_for(error.kind if error else "exception", error.message if error else "")
    )
    written = FLASHINFER_FALLBACK.get(status, status)
    correctness = performance = None
    if written in ("PASSED", "INCORRECT_NUMERICAL"):
        message = error.message if error is not None and not passed else ""
        abs_err = _finite(config.max_abs_err) if config is not None else None
        rel_err = _finite(config.max_rel_err) if config is not None else None
        # A configuration that failed the gate keeps its errors only in the message.
        abs_err = abs_err if abs_err is not None else _message_number(message, "max abs err")
        rel_err = rel_err if rel_err is not None else _message_number(message, "max rel err")
        extra = {"rel_err": _finite(config.rel_err), "tolerance": config.tolerance} if config else {}
        correctness = TraceCorrectness(
            max_absolute_error=abs_err or 0.0,  # SOL-ExecBench: 0.0 when the output is non-finite
            max_relative_error=rel_err or 0.0,
            has_nan=" NaN values" in message,  # (the gate's "NaN/Inf values" names neither)
            has_inf=" Inf values" in message,
            extra={k: v for k, v in extra.items() if v is not None} or None,
        )
    if written == "PASSED":
        performance = TracePerformance()
        if result.mode == "gpu" and config is not None:
            cand, base, speedup = (
                _finite(config.candidate_ms),
                _finite(config.baseline_ms),
                _finite(config.speedup),
            )
            if cand is not None and base is not None and speedup is not None:
                performance = TracePerformance(
                    latency_ms=cand, reference_latency_ms=base, speedup_factor=speedup
                )
    return TraceEvaluation(
        status=written,  # type: ignore[arg-type]  # one of TraceStatus by construction
        environment=environment,
        timestamp=timestamp,
        log=_log(result, config, error, status, written, commit),
        correctness=correctness,
        performance=performance,
    )


def traces_from_bench(
    result: BenchResult, workspace: Path | None = None, timestamp: str | None = None
) -> list[Trace]:
    """One Trace per configuration that has a verdict (passed, or failed with a kind that says
    something about the kernel); a run that failed before any configuration existed gives one
    per workload (see the module docstring)."""
    root = Path(workspace if workspace is not None else result.workspace).resolve()
    sol = _read_sol(root)
    definition = sol[0] if sol else (root.name or "workspace")
    solution, commit = solution_name(result, root)
    environment = environment_of(result)
    stamp = timestamp or utc_now_z()
    runs: list[tuple[TraceWorkload, TraceEvaluation]] = []
    for config in result.configs:
        error = config.error or (None if config.passed else result.error)
        if not config.passed and (error is None or error.kind in NO_VERDICT_KINDS):
            continue  # not run, or no verdict on the kernel
        runs.append((_workload(config, sol), _evaluation(result, config, error, environment, stamp, commit)))
    if not result.configs and result.error is not None and result.error.kind not in NO_VERDICT_KINDS:
        evaluation = _evaluation(result, None, result.error, environment, stamp, commit)
        runs += [(_workload(None, sol, i), evaluation) for i in range(len(sol[1]) if sol and sol[1] else 1)]
    traces = [Trace(definition=definition, workload=w, solution=solution, evaluation=e) for w, e in runs]
    return traces


def append_traces(path: Path, traces: list[Trace]) -> None:
    """Append the records as JSON lines in one write (O_APPEND: concurrent benches interleave
    whole lines, not halves), after a newline if the file does not end with one, as
    FlashInfer-Bench's append_jsonl_file does."""
    if not traces:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(trace.to_line() + "\n" for trace in traces)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            text = "\n" + text
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def write_bench_traces(path: Path, result: BenchResult, workspace: Path | None = None) -> int:
    """`bench --trace FILE`: append the result's records. A failure to write is reported in
    `result.messages` (printed with the result) rather than replacing the verdict."""
    try:
        traces = traces_from_bench(result, workspace)
        append_traces(path, traces)
    except OSError as exc:
        result.messages.append(f"--trace: cannot append to {path}: {exc.strerror or exc}")
        return 0
    except ValidationError as exc:  # a result the format cannot hold: the verdict still stands
        result.messages.append(f"--trace: no record written to {path}: {exc.errors()[0]['msg']}")
        return 0
    if not traces:
        result.messages.append(
            f"--trace: no Trace record written to {path}: this run has no verdict on the kernel"
        )
    return len(traces)


# -- Trace -> kernelscope ----------------------------------------------------------------------


def read_traces(path: Path) -> list[tuple[int, Trace, str]]:
    """(line number, record, the line) for every non-blank line, all validated; InvalidTrace
    naming each bad line (the first ten) when any fails."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidTrace(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    found: list[tuple[int, Trace, str]] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append((number, Trace.model_validate_json(line), line.strip()))
        except ValidationError as exc:
            first = exc.errors()[0]
            if first["type"] == "json_invalid":
                errors.append(f"{path}:{number}: not valid JSON ({first['msg']})")
            else:
                where = ".".join(str(p) for p in first["loc"]) or "record"
                errors.append(f"{path}:{number}: {where}: {first['msg']}")
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise InvalidTrace(f"{counted(len(errors), 'invalid Trace record')}, nothing imported: {shown}")
    if not found:
        raise InvalidTrace(f"{path} holds no Trace record")
    return found


def log_marker(log: str) -> dict[str, Any]:
    """The `kernelscope {...}` first line a kernelscope-written record carries, else {}."""
    first = log.split("\n", 1)[0]
    if not first.startswith(LOG_MARKER):
        return {}
    try:
        value = load_json(first[len(LOG_MARKER) :])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _timestamp(value: str) -> str | None:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _jsonable(value: Any) -> Any:
    """Non-finite floats as None: metrics are stored as strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def experiment_id(line: str, workspace: str) -> str:
    """Stable per record and workspace: re-importing a file adds nothing."""
    canonical = json.dumps(load_json(line), sort_keys=True, separators=(",", ":"))
    return "trace-" + hashlib.sha256(f"{workspace}\n{canonical}".encode()).hexdigest()[:24]


def experiment_from_trace(
    trace: Trace, line: str, source: Path, number: int, workspace: str = ""
) -> KernelExperiment:
    """One imported record (see Import in the module docstring); `trace` has an evaluation."""
    evaluation = trace.evaluation
    if evaluation is None:  # import_traces counts and skips these first
        raise ValueError("a workload-only trace (no evaluation) is not an experiment")
    marker = log_marker(evaluation.log)
    status = str(marker.get("status") or evaluation.status)
    kind = marker.get("kind")
    solution = trace.solution or "(unnamed solution)"
    performance = evaluation.performance
    timed = (
        evaluation.status == "PASSED"
        and performance is not None
        and evaluation.environment.hardware != INTERPRETER_HARDWARE
        and performance.latency_ms > 0
        and math.isfinite(performance.speedup_factor)
        and performance.speedup_factor > 0
    )
    score = performance.speedup_factor if timed and performance is not None else None
    environment = evaluation.environment
    libs = "; ".join(f"{name} {version}" for name, version in sorted(environment.libs.items()))
    summary = " ".join(f"imported trace: {solution} on {trace.workload.uuid}".split())  # one line
    log_body = evaluation.log.partition("\n")[2] if marker else evaluation.log
    failure = "" if evaluation.status == "PASSED" else f"{status}" + (f" ({kind})" if kind else "")
    created = _timestamp(evaluation.timestamp)
    description = [
        f"Imported from {source} line {number}: a FlashInfer-Bench / SOL-ExecBench Trace record, "
        f"measured on {environment.hardware} by the tool that wrote it, not by kernelscope.",
        f"definition: {trace.definition}; solution: {solution}; workload: {trace.workload.uuid} "
        f"{json.dumps(trace.workload.axes, sort_keys=True)}; status: {evaluation.status}"
        + (f" (SOL-ExecBench: {status})" if status != evaluation.status else ""),
        f"evaluated at: {evaluation.timestamp}"
        + ("" if created else " (not ISO 8601: created_at is the import time)"),
    ]
    if evaluation.status == "PASSED" and score is None:
        description.append("no score: the trace carries no GPU timing (an interpreter run or zero latencies)")
    return KernelExperiment(
        id=experiment_id(line, workspace),
        score=score,
        raw_result=line,
        env=(f"{environment.hardware}; {libs}" if libs else environment.hardware)[:2000],
        is_buggy=evaluation.status != "PASSED",
        error_message=(f"{failure}: {log_body.strip()}"[:_LOG_TAIL_CHARS] if failure else ""),
        change_summary=summary
        if len(summary) <= SUMMARY_MAX_CHARS
        else summary[: SUMMARY_MAX_CHARS - 3] + "...",
        detailed_description="\n".join(description),
        base_commit=str(marker.get("commit") or "")[:200],
        operator_sig=trace.definition[:1000],
        status="done"
        if evaluation.status == "PASSED"
        else ("timeout" if evaluation.status == "TIMEOUT" else "failed"),
        created_at=created or utc_now_z(),
        workspace=workspace,
        kernels=[f"trace:{trace.definition}"[:200]],
        metrics=_jsonable(
            {
                "trace": {
                    "source": str(source),
                    "line": number,
                    "definition": trace.definition,
                    "solution": trace.solution,
                    "workload": trace.workload.uuid,
                    "axes": trace.workload.axes,
                    "status": evaluation.status,
                    "sol_execbench_status": status,
                    "kernelscope_kind": kind,
                    "hardware": environment.hardware,
                    "libs": environment.libs,
                    "timestamp": evaluation.timestamp,
                    "correctness": evaluation.correctness.model_dump() if evaluation.correctness else None,
                    "performance": performance.model_dump() if performance else None,
                    "timed": timed,
                }
            }
        ),
        tags=[*IMPORTED_TAGS, f"source:{source}"],
    )


def import_traces(store: ExperimentStore, path: Path, workspace: Path | None = None) -> dict[str, Any]:
    """Validate every record of `path`, then insert them all in one transaction (InvalidTrace,
    nothing written, when any record is bad). Returns the counts and the ids."""
    source = path.expanduser().resolve()
    ws = str(workspace.expanduser().resolve()) if workspace is not None else ""
    records: list[KernelExperiment] = []
    workload_only = 0
    for number, trace, line in read_traces(source):
        if trace.evaluation is None:
            workload_only += 1  # a workload description, not a run: nothing was measured
            continue
        try:
            records.append(experiment_from_trace(trace, line, source, number, ws))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise InvalidTrace(
                f"{source}:{number}: cannot become an experiment: {where}: {first['msg']}"
            ) from None
    counts = store.import_experiments(records) if records else {"inserted": 0, "skipped": 0, "replaced": 0}
    return {
        "file": str(source),
        "workspace": ws or None,
        "records": len(records) + workload_only,
        **counts,
        "workload_only": workload_only,
        "ids": [record.id for record in records],
    }
