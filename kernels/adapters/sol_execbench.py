"""SOL-ExecBench workspaces, read as they are, without the `sol-execbench` package.

A SOL-ExecBench problem (github.com/NVIDIA/SOL-ExecBench, `docs/definition.md`,
`docs/workload.md`, `docs/solution.md`) is seeded into a workspace by atrex's
`reference/sol_seed.py`: `definition.json`, `reference.py` and `workload.jsonl` copied verbatim,
plus `config.json` (`seed`, `warmup_runs`, `iterations`, `benchmark_reference`),
`solution.json` (`spec.entry_point: "kernel.py::run"`, `destination_passing_style`) and a
`kernel.py` whose `run` writes its outputs in place. The upstream evaluator
(`driver/templates/eval_driver.py`) is the ground truth this adapter follows:

- one configuration per workload line, named `"<uuid> <var axis>=<value> ..."`;
- inputs in `definition.inputs` order: `random` inputs drawn like upstream's `core/bench/io.py`
  (`gen_inputs`, `_rand_tensor` and the name heuristics of `_generate_heuristic_tensor`),
  `scalar` inputs passed as their literal value, `custom` inputs from the reference module's
  `custom_inputs_entrypoint(axes_and_scalars, device)`; `safetensors` inputs are reported as
  unsupported (their blobs are not in a seeded workspace);
- the candidate is called destination-passing (`run(*inputs, *outputs)` into zero-filled
  outputs, `io.allocate_outputs`) or value-returning (`run(*inputs)`), as `solution.json`
  says; the reference is `reference.py`'s `run`, always value-returning;
- the tolerance is the workload's `tolerance` with upstream's `ToleranceSpec` defaults
  (`max_atol`/`max_rtol` 1e-2, `required_matched_ratio` 0.99, no `max_error_cap`, no
  `allow_negative_inf`), applied by SOL-ExecBench's own rule (`core/bench/correctness.py`);
  kernelscope's stricter every-element verdict is reported beside it, and upstream's decides.

Under the CPU interpreter, var axes may be shrunk (never const axes, never axes a constraint
ties to others) so one configuration runs in seconds; the configuration records
`shrunk_for_interpreter: {axis: [original, used]}` and the runner reports it.

Score: SOL-ExecBench's goal is the smallest geometric-mean latency over the workloads
(atrex's test_kernel.py `latency_us_geomean`). The harness's score is the geometric mean of
per-workload speedups over the baseline (the reference unless one is given), which is
geomean(baseline latency) / geomean(candidate latency): with the baseline fixed, a higher
score is exactly a lower geomean latency, and it equals the pinned test_kernel.py's
`speedup_vs_ref_geomean`. atrex v0.3.0's evaluators score by the arithmetic mean of the
per-workload speedups instead (`performance_score`, docs/releases/v0.3.0.md): a gate that
reports it is read by that score (daemon/engine/run/gate_output.py), and the harness's geomean
may rank two kernels differently. Each configuration's `candidate_ms` is that workload's latency.

Not supported: `safetensors` inputs, packed fp4 dtypes, compiled (C++/CUDA) solutions, and
the `--parent` timing (the runner calls the parent's `--entry` directly, without outputs).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelscope.kernels.adapters.base import Problem, ProblemError, ProblemSource, entry_point, load_module
from kernelscope.protocol.sol_solution import SolutionError, read_spec
from kernelscope.protocol.sol_workloads import WORKLOADS, WorkloadsError, parse_workloads

DEFINITION = "definition.json"
BENCH_CONFIG = "config.json"

# Upstream defaults: core/bench/config/benchmark_config.py (seed) and
# core/data/workload.py ToleranceSpec (max_atol, max_rtol).
UPSTREAM_SEED = 200
UPSTREAM_ATOL = 1e-2
UPSTREAM_RTOL = 1e-2
UPSTREAM_MATCHED_RATIO = 0.99
# eval_driver.py checks every workload on this many rounds of fresh inputs ("10 rounds").
UPSTREAM_ROUNDS = 10
# kernelscope's runner default `--entry`: when it is left as is, solution.json names the entry.
DEFAULT_ENTRY = "kernel_fn"
# Under the interpreter a configuration's inputs and outputs together hold at most this many
# elements (var axes are halved until they fit): the interpreter runs each Triton program as
# NumPy operations, and at this size a row-wise kernel (250 rows of 256) takes about 0.25 s a
# call on one core, so a configuration's correctness seeds and timing rounds take seconds.
INTERPRETER_ELEMENT_CAP = 1 << 17
# Languages upstream compiles to a shared library (eval_driver's _CPP_LANGUAGES): no Python entry.
_COMPILED_LANGUAGES = {"cuda_cpp", "cutlass", "cudnn", "cublas"}

_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "bool": torch.bool,
}
# Packed 4-bit floats: upstream quantizes a randn tensor and packs two values a byte (io.py
# _cast_to_fp4x2), which changes the last dimension; not reproduced here.
_UNSUPPORTED_DTYPES = {"float4_e2m1", "float4_e2m1fn_x2"}
# Integer ranges of upstream's _rand_tensor (high exclusive).
_INT_RANGES = {torch.int8: (-128, 128), torch.int16: (-1024, 1024), torch.int32: (-1024, 1024)}


class UnsupportedWorkload(ProblemError):
    """A workload this adapter cannot build inputs for; the runner reports it per configuration
    as `unsupported` (not as a kernel failure), so the other workloads still run."""

    bench_kind = "unsupported"


# -- files --------------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProblemError(f"cannot read {what} {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ProblemError(f"{what} {path} is not valid JSON: {exc}") from exc


def _read_workloads(path: Path) -> list[dict[str, Any]]:
    try:
        workloads = parse_workloads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProblemError(f"cannot read {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ProblemError(f"{path.name} is not UTF-8 text: {exc}") from None
    except WorkloadsError as exc:
        raise ProblemError(str(exc)) from None
    if not workloads:
        raise ProblemError(f"{path.name} holds no workload")
    return workloads


def _split_entry(entry_point: str) -> tuple[str, str]:
    """`"kernel.py::run"` -> ("kernel.py", "run"); a bare file means `run` (eval_driver.py)."""
    if "::" in entry_point:
        file, function = entry_point.rsplit("::", 1)
        return file, function
    return entry_point, "run"


def solution_spec(workspace: Path, entry: str) -> tuple[str, bool]:
    """The entry function and calling convention: solution.json's `spec` (DPS defaults to
    true, as upstream's Solution schema); an explicit `--entry` names another function."""
    try:
        spec = read_spec(workspace)  # protocol/sol_solution.py: the one reader of solution.json
    except SolutionError as exc:
        raise ProblemError(str(exc)) from None
    compiled = sorted(set(spec.get("languages") or []) & _COMPILED_LANGUAGES)
    file, function = _split_entry(str(spec.get("entry_point") or "kernel.py::run"))
    if compiled or not file.endswith(".py"):
        raise ProblemError(
            f"solution.json's entry point {file}::{function} ({', '.join(compiled) or 'not Python'}) "
            "is compiled by SOL-ExecBench's build step; kernelscope imports Python entry points only"
        )
    if entry != DEFAULT_ENTRY:
        function = entry
    return function, bool(spec.get("destination_passing_style", True))


# -- axes and shapes ----------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate_axis_expression(expression: str, values: dict[str, int]) -> int:
    """An `expr` axis: arithmetic over other axes (+ - * / // % ** and parentheses, the set
    upstream's `core/data/shapes.py` allows); never `eval`, since the file is user data."""

    def value(node: ast.AST) -> int | float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ProblemError(f"axis expression {expression!r} names unknown axis {node.id!r}")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:  # a shape, not a huge number
                raise ProblemError(f"axis expression {expression!r} raises to the power {right}")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))
        raise ProblemError(f"axis expression {expression!r} uses {type(node).__name__}, not arithmetic")

    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ProblemError(f"axis expression {expression!r} cannot be evaluated: {exc}") from exc
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    if not isinstance(result, int):
        raise ProblemError(f"axis expression {expression!r} is not an integer ({result!r})")
    return result


class _Definition:
    """The parts of definition.json the harness needs, validated once at load."""

    def __init__(self, data: Any, path: Path) -> None:
        if not isinstance(data, dict):
            raise ProblemError(f"{path} is not a JSON object")
        for key in ("axes", "inputs", "outputs"):
            if not isinstance(data.get(key), dict):
                raise ProblemError(f"{path} has no {key!r} object (SOL-ExecBench definition schema)")
        self.name = str(data.get("name", "?"))
        self.op_type = data.get("op_type")
        self.axes: dict[str, dict[str, Any]] = data["axes"]
        self.inputs: dict[str, dict[str, Any]] = data["inputs"]
        self.outputs: dict[str, dict[str, Any]] = data["outputs"]
        self.custom_entry: str | None = data.get("custom_inputs_entrypoint")
        self.constraints = [str(c) for c in data.get("constraints") or []]
        for name, axis in self.axes.items():
            kind = axis.get("type") if isinstance(axis, dict) else None
            if kind not in ("const", "var", "expr"):
                raise ProblemError(f"{path}: axis {name!r} has type {kind!r}, not const, var or expr")
        for what, specs in (("input", self.inputs), ("output", self.outputs)):
            for name, spec in specs.items():
                if not isinstance(spec, dict) or "dtype" not in spec:
                    raise ProblemError(f"{path}: {what} {name!r} has no dtype")
                dtype = spec["dtype"]
                if dtype not in _DTYPES and dtype not in _UNSUPPORTED_DTYPES:
                    raise ProblemError(f"{path}: {what} {name!r} has unknown dtype {dtype!r}")

    def kind(self, axis: str) -> str:
        return str(self.axes[axis]["type"])

    @property
    def var_axes(self) -> list[str]:
        return [name for name, axis in self.axes.items() if axis["type"] == "var"]

    def constrained_axes(self) -> set[str]:
        """Axes named in a constraint (e.g. `len_indptr == batch_size + 1`): shrinking one
        alone would break the relation the reference asserts."""
        words = set(re.findall(r"[A-Za-z_]\w*", " ".join(self.constraints)))
        return words & set(self.axes)

    def resolve(self, var_values: dict[str, int]) -> dict[str, int]:
        """Every axis's value: const from the definition, var from the workload, expr computed
        from those (as upstream's Definition.get_resolved_axes_values)."""
        values = {n: int(a["value"]) for n, a in self.axes.items() if a["type"] == "const"}
        values.update(var_values)
        for name, axis in self.axes.items():
            if axis["type"] == "expr":
                values[name] = evaluate_axis_expression(str(axis.get("expression", "")), values)
        return values

    def shape(self, spec: dict[str, Any], axes: dict[str, int]) -> tuple[int, ...] | None:
        """None for a Python scalar (`shape: null`), () for a 0-d tensor; entries are axis
        names, or integers written as numbers or digit strings."""
        shape = spec.get("shape")
        if shape is None:
            return None
        dims = []
        for entry in shape:
            if isinstance(entry, int):
                dims.append(entry)
            elif isinstance(entry, str) and entry.isdigit():
                dims.append(int(entry))
            elif entry in axes:
                dims.append(axes[entry])
            else:
                raise ProblemError(f"shape {shape} names axis {entry!r}, which the definition lacks")
        return tuple(dims)

    def dtypes(self) -> list[str]:
        seen: list[str] = []
        for spec in (*self.inputs.values(), *self.outputs.values()):
            if spec["dtype"] not in seen:
                seen.append(spec["dtype"])
        return seen


def _elements(definition: _Definition, axes: dict[str, int]) -> int:
    total = 0
    for spec in (*definition.inputs.values(), *definition.outputs.values()):
        shape = definition.shape(spec, axes)
        if shape is not None:
            total += math.prod(shape)
    return total


def shrink_for_interpreter(
    definition: _Definition, var_values: dict[str, int], cap: int = INTERPRETER_ELEMENT_CAP
) -> dict[str, int]:
    """Halve the largest shrinkable var axis until the configuration's tensors hold at most
    `cap` elements. Const axes are the problem's identity and never change; axes tied by a
    constraint are left alone; expr axes follow from the shrunk values."""
    values = dict(var_values)
    frozen = definition.constrained_axes()
    shrinkable = [a for a in definition.var_axes if a not in frozen and a in values]
    while _elements(definition, definition.resolve(values)) > cap:
        candidates = [a for a in shrinkable if values[a] > 1]
        if not candidates:
            break
        largest = max(candidates, key=lambda a: values[a])
        values[largest] = (values[largest] + 1) // 2
    return values


# -- inputs -------------------------------------------------------------------------------------

_WEIGHT_SUFFIXES = (
    "_weight",
    "_weights",
    "_proj",
    "_projs",
    "_proj_weight",
    "_proj_weights",
    "_weight_matrix",
)
_NORM_PREFIXES = ("_norm", "_layernorm", "layernorm")
_BINARY_MASKS = ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
_BINARY_MASK_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")
_ROPE_COS = ("cos", "cos_cached", "rope_cos")
_ROPE_SIN = ("sin", "sin_cached", "rope_sin")
_POSITIVE = ("rstd", "std", "variance", "var")
_SOFTMAX_OUTPUTS = ("attn_weights", "attention_weights", "routing_weights")
_DECAY_RANGES = {"A_log": (-5.0, -1.0), "A": (-1.0, -0.001), "g": (-5.0, 0.0)}


def _is_norm_param(name: str, suffix: str) -> bool:
    """`norm_weight`, `<x>_norm_weight`, `layernorm2_weight`... (suffix `_weight` or `_bias`)."""
    if name == "norm" + suffix:
        return True
    if not name.endswith(suffix):
        return False
    prefix = name[: -len(suffix)]
    stripped = prefix.rstrip("0123456789")
    return prefix.endswith(_NORM_PREFIXES) or (bool(stripped) and stripped.endswith(("norm", "layernorm")))


def _is_weight_matrix(name: str, shape: tuple[int, ...]) -> bool:
    if len(shape) < 2:
        return False
    stripped = name.rstrip("0123456789")
    return (
        name == "weight"
        or name.endswith(_WEIGHT_SUFFIXES)
        or stripped == "weight"
        or stripped.endswith(_WEIGHT_SUFFIXES)
    )


def _is_positive(name: str) -> bool:
    base = name.rstrip("0123456789")
    return (
        name in _POSITIVE
        or name.endswith(("_rstd", "_std", "_variance", "_var"))
        or base in _POSITIVE
        or base.endswith(("_rstd", "_std", "_var"))
    )


def _plain_random(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    """Upstream's `_rand_tensor`: randn for 16/32-bit floats, clamped randn for fp8, fair bits
    for bool, bounded integers."""
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    low, high = _INT_RANGES.get(dtype, (-1024, 1024))
    return torch.randint(low, high, shape, dtype=dtype, device=device)


def _heuristic_random(
    name: str, shape: tuple[int, ...], dtype: torch.dtype, device: str, description: str
) -> torch.Tensor | None:
    """Upstream's `_generate_heuristic_tensor`: inputs whose name (or description) says what
    they hold get values of that kind, so norms, masks, rotary tables, decays and weights see
    realistic data. None: no rule applies (16/32/64-bit floats only)."""
    if not dtype.is_floating_point or dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return None
    text = description.lower()
    if _is_norm_param(name, "_weight"):
        return torch.ones(shape, dtype=dtype, device=device)
    if _is_norm_param(name, "_bias"):
        return torch.zeros(shape, dtype=dtype, device=device)
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    if square and (
        name in ("attention_mask", "causal_mask") or ("attention mask" in text and "causal" in text)
    ):
        mask = torch.zeros(shape, dtype=dtype, device=device)
        above = torch.triu(torch.ones(shape[-1], shape[-1], device=device), diagonal=1).bool()
        mask[..., above] = torch.finfo(dtype).min
        return mask
    if name in _BINARY_MASKS or (name.endswith("_mask") and any(w in text for w in _BINARY_MASK_WORDS)):
        return torch.randint(0, 2, shape, device=device).to(dtype)
    if name in _ROPE_COS or name in _ROPE_SIN:
        angles = torch.randn(shape, dtype=torch.float32, device=device).clamp_(-math.pi, math.pi)
        return (torch.cos(angles) if name in _ROPE_COS else torch.sin(angles)).to(dtype)
    if _is_positive(name):
        return torch.randn(shape, dtype=dtype, device=device).abs() + 0.1
    if name == "A_cumsum":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-0.1, 0.0).cumsum(dim=-1)
    if name in _DECAY_RANGES:
        low, high = _DECAY_RANGES[name]
        return torch.empty(shape, dtype=dtype, device=device).uniform_(low, high)
    if name in _SOFTMAX_OUTPUTS or ("softmax" in text and "output" in text):
        return torch.softmax(torch.randn(shape, dtype=torch.float32, device=device), dim=-1).to(dtype)
    if _is_weight_matrix(name, shape):
        return torch.randn(shape, dtype=dtype, device=device) / math.sqrt(shape[-1])
    return None


# -- calling conventions ------------------------------------------------------------------------


def _as_outputs(value: Any, definition: _Definition, device: str, what: str) -> tuple[Any, ...]:
    """A value-returning `run`'s result in definition.outputs order, accepting what upstream's
    `io.normalize_outputs` accepts: a tensor, a tuple/list, a dict by output name, a scalar.
    A tensor on another device is moved to the evaluation device, as upstream moves it (a
    no-op, the same tensor, when it is there already)."""
    names = list(definition.outputs)

    def tensor(name: str, item: Any) -> Any:
        if isinstance(item, torch.Tensor):
            return item.to(device)
        if isinstance(item, (bool, int, float)):
            return torch.tensor(item, dtype=_DTYPES[definition.outputs[name]["dtype"]], device=device)
        return item  # the gate names the wrong type

    if isinstance(value, dict):
        missing = [n for n in names if n not in value]
        if missing:
            raise ProblemError(f"{what} returned a dict without output(s) {', '.join(missing)}")
        return tuple(tensor(n, value[n]) for n in names)
    if isinstance(value, (list, tuple)):
        return tuple(tensor(n, v) for n, v in zip(names, value, strict=False)) + tuple(value[len(names) :])
    return (tensor(names[0], value),) if names else (value,)


class _DestinationPassing:
    """Calls `run(*inputs, *outputs)` and returns the outputs, which the harness allocates
    zero-filled from definition.outputs (upstream's `io.allocate_outputs`).

    Correctness calls get fresh zeroed outputs each time, as upstream. Repeated calls with
    the very same input objects are timing calls (the runner times one input set over and
    over): they reuse the previous outputs, which the timer zeroes before each timed call,
    outside the timed region (`prepare_timed_call`), as upstream's ShiftingMemoryPoolAllocator
    zero-fills them in its untimed setup: a kernel may accumulate into its outputs (atomic adds,
    split-K), and its timed outputs are checked."""

    def __init__(self, fn: Callable[..., Any], problem: SolExecBenchProblem, config: dict[str, Any]) -> None:
        self.fn, self.problem, self.config = fn, problem, config
        self._last_inputs: tuple[Any, ...] | None = None  # held, so their ids cannot be reused
        self._outputs: tuple[torch.Tensor, ...] = ()

    def __call__(self, *inputs: Any) -> tuple[torch.Tensor, ...]:
        same = self._last_inputs is not None and len(self._last_inputs) == len(inputs)
        same = same and all(a is b for a, b in zip(self._last_inputs or (), inputs, strict=False))
        if not same:
            self._outputs = self.problem.allocate_outputs(self.config, inputs)
            self._last_inputs = inputs
        self.fn(*inputs, *self._outputs)
        return self._outputs

    def prepare_timed_call(self) -> None:
        """Zero the outputs the next timed call writes into (kernels.timing calls it untimed)."""
        for output in self._outputs:
            output.zero_()


# -- the problem --------------------------------------------------------------------------------


class SolExecBenchProblem(Problem):
    """A SOL-ExecBench workspace: workloads as configurations, `reference.py::run` as the
    reference (and default baseline), solution.json's entry point in the candidate."""

    kind = "sol-execbench"
    layout_checked = False  # eval_driver checks shape and dtype, compute_error_stats values only
    correctness_trials = UPSTREAM_ROUNDS
    inputs_in_result = True  # destination passing: an input run() changes is what it computes

    def __init__(
        self,
        workspace: Path,
        reference_module: Any,
        candidate_module: Any,
        baseline_module: Any | None,
        entry: str,
    ) -> None:
        self.workspace = workspace
        self.definition = _Definition(
            _read_json(workspace / DEFINITION, "definition"), workspace / DEFINITION
        )
        self.workloads = _read_workloads(workspace / WORKLOADS)
        self.ref = reference_module
        if not callable(getattr(reference_module, "run", None)):
            raise ProblemError(f"{getattr(reference_module, '__file__', 'reference.py')} defines no run()")
        bench_config = (
            _read_json(workspace / BENCH_CONFIG, "config") if (workspace / BENCH_CONFIG).is_file() else {}
        )
        seed = bench_config.get("seed", UPSTREAM_SEED) if isinstance(bench_config, dict) else UPSTREAM_SEED
        self.base_seed = int(seed)
        self.function, self.destination_passing = solution_spec(workspace, entry)
        self.candidate_fn = self._entry_of(candidate_module, "candidate")
        self.baseline_fn = self._entry_of(baseline_module, "baseline") if baseline_module else None
        self.device = "cpu"
        self._calls: dict[tuple[str, str], Callable[..., Any]] = {}
        for workload in self.workloads:
            self._check_workload(workload)

    def _check_workload(self, workload: dict[str, Any]) -> None:
        """Bad axes surface here, at load (a setup error), not later in configs(), which the
        runner calls outside its per-configuration error handling."""
        missing = [a for a in self.definition.var_axes if a not in workload["axes"]]
        if missing:
            raise ProblemError(
                f"workload {workload['uuid']} gives no value for var axis {', '.join(missing)}"
            )
        values = {a: workload["axes"][a] for a in self.definition.var_axes}
        wrong = [
            f"{a}={v!r}" for a, v in values.items() if not isinstance(v, int) or isinstance(v, bool) or v < 0
        ]
        if wrong:
            raise ProblemError(
                f"workload {workload['uuid']}: var axes must be non-negative integers ({', '.join(wrong)})"
            )
        axes = self.definition.resolve(values)
        for spec in (*self.definition.inputs.values(), *self.definition.outputs.values()):
            self.definition.shape(spec, axes)

    @classmethod
    def load(cls, source: ProblemSource) -> SolExecBenchProblem:
        solution_spec(source.workspace, source.entry)  # a compiled solution is named before any import fails
        reference = load_module(source.reference, "reference")
        candidate = load_module(source.candidate, "candidate")
        baseline = load_module(source.baseline, "baseline") if source.baseline else None
        return cls(source.workspace, reference, candidate, baseline, source.entry)

    @property
    def entry_label(self) -> str:
        """The function the result names as its entry point (the runner's is `--entry`)."""
        return self.function

    def _entry_of(self, module: Any, purpose: str) -> Callable[..., Any]:
        hint = "solution.json spec.entry_point names it; --entry overrides"
        return entry_point(module, self.function, purpose, hint)

    # -- configurations -------------------------------------------------------------------

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        configs = []
        dtypes = ",".join(self.definition.dtypes())
        for index, workload in enumerate(self.workloads):
            var_values = {a: int(workload["axes"][a]) for a in self.definition.var_axes}
            axes_text = " ".join(f"{a}={v}" for a, v in var_values.items())
            config: dict[str, Any] = {
                "name": f"{workload['uuid']} {axes_text}".strip(),
                "uuid": str(workload["uuid"]),
                "axes": var_values,
                "dtypes": dtypes,  # read by interpreter_limits (bf16/fp8 under the interpreter)
                "workload_index": index,
            }
            for axis, value in var_values.items():  # scalar params show in the result
                config.setdefault(axis, value)
            if interpreter:
                used = shrink_for_interpreter(self.definition, var_values)
                shrunk = {a: [var_values[a], used[a]] for a in var_values if used[a] != var_values[a]}
                if shrunk:
                    config["shrunk_for_interpreter"] = shrunk
            configs.append(config)
        return configs

    def _workload(self, config: dict[str, Any]) -> dict[str, Any]:
        return self.workloads[int(config["workload_index"])]

    def axes(self, config: dict[str, Any]) -> dict[str, int]:
        """Every axis's value as run: shrunk var axes under the interpreter, else the workload's."""
        var_values = dict(config["axes"])
        for axis, (_, used) in (config.get("shrunk_for_interpreter") or {}).items():
            var_values[axis] = used
        return self.definition.resolve(var_values)

    # -- inputs and outputs ---------------------------------------------------------------

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        """Inputs in definition order. Seed `s` draws from torch.manual_seed(config.json seed +
        s); upstream seeds once and draws every round of every workload from that one stream,
        so the values differ from its run but the distributions are the same."""
        self.device = device
        workload = self._workload(config)
        specs = workload.get("inputs") or {}
        for name, spec in specs.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            if kind == "safetensors":
                raise UnsupportedWorkload(
                    f"workload {workload['uuid']}: input {name!r} is loaded from a safetensors blob "
                    f"({spec.get('path')}, key {spec.get('tensor_key')}): kernelscope does not load "
                    "blobs (sol_seed.py copies none into the workspace; the sol-execbench evaluator "
                    "resolves them from its staging directory or $FLASHINFER_TRACE_DIR)"
                )
        for name, spec in self.definition.inputs.items():
            if spec["dtype"] in _UNSUPPORTED_DTYPES:
                raise UnsupportedWorkload(
                    f"workload {workload['uuid']}: input {name!r} is {spec['dtype']}: packed 4-bit "
                    "inputs are not generated by kernelscope (upstream packs two values a byte)"
                )
        axes = self.axes(config)
        torch.manual_seed(self.base_seed + seed)
        custom = self._custom_inputs(workload, axes, device) if self._has_custom(specs) else {}
        values: list[Any] = []
        for name, spec in self.definition.inputs.items():
            spec_raw = specs.get(name)
            source: dict[str, Any] = spec_raw if isinstance(spec_raw, dict) else {"type": "random"}
            kind = source.get("type", "random")
            if kind == "scalar":
                values.append(source.get("value"))
            elif kind == "custom":
                if name not in custom:
                    raise ProblemError(
                        f"workload {workload['uuid']}: {self.definition.custom_entry}() returned no {name!r}"
                    )
                item = custom[name]
                values.append(item.to(device) if isinstance(item, torch.Tensor) else item)
            elif kind == "random":
                values.append(self._random_input(name, spec, axes, device))
            else:
                raise UnsupportedWorkload(
                    f"workload {workload['uuid']}: input {name!r} has type {kind!r}, which neither "
                    "SOL-ExecBench's schema nor kernelscope knows (random, scalar, custom; safetensors)"
                )
        return tuple(values)

    @staticmethod
    def _has_custom(specs: dict[str, Any]) -> bool:
        return any(isinstance(s, dict) and s.get("type") == "custom" for s in specs.values())

    def _custom_inputs(self, workload: dict[str, Any], axes: dict[str, int], device: str) -> dict[str, Any]:
        """Upstream calls the reference's `custom_inputs_entrypoint(axes_and_scalars, device)`
        with every resolved axis and the workload's scalar inputs (io.gen_inputs)."""
        name = self.definition.custom_entry
        fn = getattr(self.ref, name, None) if name else None
        if not callable(fn):
            raise ProblemError(
                f"workload {workload['uuid']} has custom inputs but reference.py defines no "
                f"custom_inputs_entrypoint function ({name!r} in definition.json)"
            )
        scalars = {
            n: s.get("value")
            for n, s in (workload.get("inputs") or {}).items()
            if isinstance(s, dict) and s.get("type") == "scalar"
        }
        produced = fn({**axes, **scalars}, torch.device(device))
        if not isinstance(produced, dict):
            raise ProblemError(f"{name}() returned {type(produced).__name__}, not a dict of inputs")
        return produced

    def _random_input(self, name: str, spec: dict[str, Any], axes: dict[str, int], device: str) -> Any:
        dtype = _DTYPES[spec["dtype"]]
        shape = self.definition.shape(spec, axes)
        if shape is None:  # a Python scalar drawn like a 0-d tensor (io.gen_inputs)
            return _plain_random((), dtype, device).item()
        value = _heuristic_random(name, shape, dtype, device, str(spec.get("description") or ""))
        if value is None:
            value = _plain_random(shape, dtype, device)
        if self.definition.op_type == "sampling" and name == "probs":
            value = torch.softmax(value, dim=-1)
        return value

    def allocate_outputs(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
        """Zero-filled outputs from definition.outputs, on the inputs' device."""
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device(self.device))
        axes = self.axes(config)
        outputs = []
        for name, spec in self.definition.outputs.items():
            shape = self.definition.shape(spec, axes)
            if shape is None:
                raise ProblemError(f"output {name!r} has shape null: a destination must be a tensor")
            outputs.append(torch.zeros(shape, dtype=_DTYPES[spec["dtype"]], device=device))
        return tuple(outputs)

    # -- the three functions --------------------------------------------------------------

    def _call(self, fn: Callable[..., Any], config: dict[str, Any], role: str) -> Callable[..., Any]:
        key = (str(config["workload_index"]), role)  # uuids are not checked for uniqueness
        if key not in self._calls:
            if self.destination_passing:
                self._calls[key] = _DestinationPassing(fn, self, config)
            else:
                self._calls[key] = lambda *inputs: _as_outputs(
                    fn(*inputs), self.definition, self.device, role
                )
        return self._calls[key]

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return _as_outputs(self.ref.run(*inputs), self.definition, self.device, "the reference")

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        return self._call(self.candidate_fn, config, "the candidate")

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        if self.baseline_fn is not None:
            return self._call(self.baseline_fn, config, "the baseline")
        return lambda *inputs: self.ref.run(*inputs)

    # -- measures -------------------------------------------------------------------------

    def bytes_moved(self, config: dict[str, Any]) -> float | None:
        """Every input and output tensor read or written once, at the sizes that ran: the
        minimum traffic, so GB/s is a lower bound on what the kernel moves."""
        axes = self.axes(config)
        total = 0
        for spec in (*self.definition.inputs.values(), *self.definition.outputs.values()):
            shape = self.definition.shape(spec, axes)
            if shape is not None and spec["dtype"] in _DTYPES:
                total += math.prod(shape) * _DTYPES[spec["dtype"]].itemsize
        return float(total) or None

    def tolerance(self, config: dict[str, Any]) -> dict[str, Any] | None:
        """The workload's `tolerance`, every field of upstream's ToleranceSpec with its
        defaults (core/data/workload.py): the gate applies SOL-ExecBench's rule with them
        (kernels/gate.py) and reports kernelscope's stricter every-element verdict beside it."""
        tolerance = self._workload(config).get("tolerance") or {}
        cap = tolerance.get("max_error_cap")
        return {
            "atol": float(tolerance.get("max_atol", UPSTREAM_ATOL)),
            "rtol": float(tolerance.get("max_rtol", UPSTREAM_RTOL)),
            "required_matched_ratio": float(tolerance.get("required_matched_ratio", UPSTREAM_MATCHED_RATIO)),
            "max_error_cap": None if cap is None else float(cap),
            "allow_negative_inf": bool(tolerance.get("allow_negative_inf", False)),
        }
