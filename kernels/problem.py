"""The benchmark contract: how the runner finds configurations, inputs, the reference, the
candidate and the baseline in a workspace. Runs in the runner's child process only.

Native contract (documented in the README):
- the candidate (kernel.py) defines an entry point, by default `kernel_fn(*inputs)`, a plain
  Python function that launches the Triton kernels and returns the output tensor(s);
- reference.py defines `CONFIGS` (list of dicts with a "name"; optional `CPU_CONFIGS` used
  under the interpreter), `make_inputs(config, seed, device)` returning a tuple of
  arguments, `reference(*inputs)` (e.g. PyTorch eager), and optionally `flops(config)`,
  `bytes_moved(config)` and `TOLERANCE` / `tolerance(config)` (`{"rel_err": 0.01}` or
  `{"atol": ..., "rtol": ...}`).

KernelBench contract: the reference file defines `Model`, `get_inputs()`,
`get_init_inputs()`; the candidate defines `ModelNew` with the same constructor.
"""

from __future__ import annotations

import abc
import importlib.util
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from kernelscope.kernels.sizing import ProblemSizes


class ProblemError(Exception):
    """The workspace does not follow the contract (a setup error)."""


def load_module(path: Path, purpose: str, sizes: dict[str, int] | None = None) -> Any:
    """Import a file as a fresh module (a unique name, so candidate and baseline never mix).

    `sizes` replaces module-level integer constants where the module assigns them
    (`--problem-size`, see `sizing.exec_with_sizes`)."""
    if not path.is_file():
        raise ProblemError(f"{purpose} {path} does not exist")
    name = f"_kernelscope_{purpose}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"cannot load {purpose} {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        if sizes:
            from kernelscope.kernels.sizing import SizeError, exec_with_sizes

            try:
                exec_with_sizes(module, path, sizes)
            except SizeError as exc:
                raise ProblemError(str(exc)) from None
        else:
            spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


class Problem(abc.ABC):
    """What the runner needs, whatever the contract."""

    kind = "native"

    @abc.abstractmethod
    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        """See the module docstring."""

    @abc.abstractmethod
    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        """See the module docstring."""

    @abc.abstractmethod
    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        """See the module docstring."""

    @abc.abstractmethod
    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        """See the module docstring."""

    @abc.abstractmethod
    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        """See the module docstring."""

    def flops(self, config: dict[str, Any]) -> float | None:
        return None

    def bytes_moved(self, config: dict[str, Any]) -> float | None:
        return None

    def tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        return None

    def default_tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        """The contract's own default, used when neither the reference module nor the README
        sets one (None: the gate's per-dtype defaults)."""
        return None


class NativeProblem(Problem):
    def __init__(
        self, reference_module: Any, candidate_module: Any, baseline_module: Any | None, entry: str
    ) -> None:
        for name in ("CONFIGS", "make_inputs", "reference"):
            if not hasattr(reference_module, name):
                raise ProblemError(f"reference module does not define {name} (see the README's contract)")
        self.ref = reference_module
        self.entry = entry
        self.candidate_fn = self._entry_of(candidate_module, "candidate")
        self.baseline_fn = self._entry_of(baseline_module, "baseline") if baseline_module else None

    def _entry_of(self, module: Any, purpose: str) -> Callable[..., Any]:
        fn = getattr(module, self.entry, None)
        if not callable(fn):
            raise ProblemError(
                f"{purpose} {getattr(module, '__file__', '?')} has no entry point {self.entry}() "
                "(set another name with --entry)"
            )
        return fn

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        configs = getattr(self.ref, "CPU_CONFIGS", None) if interpreter else None
        configs = configs or self.ref.CONFIGS
        if not isinstance(configs, list) or not configs:
            raise ProblemError("CONFIGS must be a non-empty list of dicts")
        return [c if "name" in c else {**c, "name": f"config{i}"} for i, c in enumerate(configs)]

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        inputs = self.ref.make_inputs(config, seed, device)
        return tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        return self.ref.reference(*inputs)

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        return self.candidate_fn

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        if self.baseline_fn is not None:
            return self.baseline_fn
        return self.ref.reference

    def _optional(self, name: str, config: dict[str, Any]) -> Any:
        fn = getattr(self.ref, name, None)
        return fn(config) if callable(fn) else None

    def flops(self, config: dict[str, Any]) -> float | None:
        return self._optional("flops", config)

    def bytes_moved(self, config: dict[str, Any]) -> float | None:
        return self._optional("bytes_moved", config)

    def tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        value = self._optional("tolerance", config)
        return value if value is not None else getattr(self.ref, "TOLERANCE", None)


# KernelBench's precisions and its correctness tolerance per precision, used as both atol and
# rtol (kernelbench/eval.py: get_torch_dtype_from_string, get_tolerance_for_precision).
KERNELBENCH_PRECISIONS: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}
KERNELBENCH_TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


class KernelBenchProblem(Problem):
    """A KernelBench-style problem: `Model`/`get_inputs`/`get_init_inputs` vs `ModelNew`.

    Read as KernelBench's `eval_kernel_against_ref` reads it: the same seed before
    `get_init_inputs()` and each model's construction (same weights), models moved with
    `.to(device, dtype=precision)`, inputs cast to the precision and moved. One difference:
    KernelBench casts every tensor input, integer and bool ones included; here those keep their
    dtype, because class indices (CrossEntropyLoss's targets) or masks (masked_cumsum) cast to
    a float type no longer mean what the problem says.

    Tolerance: the module's own (`TOLERANCE = {"atol": ..., "rtol": ...}` or
    `{"rel_err": ...}`, optionally keyed by precision, or module-level `atol` / `rtol`
    numbers; upstream problem files declare none), else the README's threshold, else
    KernelBench's per-precision value as both atol and rtol.
    """

    kind = "kernelbench"

    def __init__(
        self,
        reference_module: Any,
        candidate_module: Any,
        baseline_module: Any | None,
        precision: str = "fp32",
        sizes: dict[str, int] | None = None,
    ) -> None:
        if not hasattr(candidate_module, "ModelNew"):
            raise ProblemError("the candidate does not define ModelNew (KernelBench contract)")
        if precision not in KERNELBENCH_PRECISIONS:
            raise ProblemError(
                f"precision {precision!r} is not one of KernelBench's: {', '.join(KERNELBENCH_PRECISIONS)}"
            )
        self.ref = reference_module
        self.candidate_cls = candidate_module.ModelNew
        self.baseline_cls = getattr(baseline_module, "ModelNew", None) if baseline_module else None
        self.precision = precision
        self.dtype = KERNELBENCH_PRECISIONS[precision]
        self.sizes = dict(sizes or {})
        self.declared_tolerance = self._declared_tolerance()
        self._built: dict[str, Any] = {}
        self.device = "cpu"

    @property
    def model_count(self) -> int:
        """Models `prepare` builds: reference, candidate and, when it is a kernel, the baseline."""
        return 3 if self.baseline_cls is not None else 2

    def _declared_tolerance(self) -> dict[str, float] | None:
        declared = getattr(self.ref, "TOLERANCE", None)
        if isinstance(declared, dict) and declared and set(declared) <= set(KERNELBENCH_PRECISIONS):
            declared = declared.get(self.precision)  # keyed by precision
        if isinstance(declared, dict) and declared:
            if not ({"rel_err"} <= set(declared) or {"atol", "rtol"} <= set(declared)):
                raise ProblemError(
                    'the reference module\'s TOLERANCE must hold "rel_err" or "atol" and "rtol", '
                    f"not {sorted(declared)}"
                )
            return {key: float(value) for key, value in declared.items()}
        atol, rtol = getattr(self.ref, "atol", None), getattr(self.ref, "rtol", None)
        if atol is None and rtol is None:
            return None
        for name, value in (("atol", atol), ("rtol", rtol)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ProblemError(f"the reference module's {name} must be a number, not {value!r}")
        default = KERNELBENCH_TOLERANCE[self.precision]
        return {
            "atol": float(atol if atol is not None else default),
            "rtol": float(rtol if rtol is not None else default),
        }

    def _cast(self, value: Any) -> Any:
        """KernelBench's `_process_input_tensor`, floating-point tensors only (see the class)."""
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.to(dtype=self.dtype)
        return value

    def _model(self, cls: Any) -> Any:
        torch.manual_seed(0)  # same weights for reference, baseline and candidate
        init_inputs = [self._cast(x) for x in self.ref.get_init_inputs()]
        init_inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in init_inputs]
        return cls(*init_inputs).to(device=self.device, dtype=self.dtype).eval()

    def estimate_sizes(self) -> ProblemSizes:
        """One seed's input, output and parameter sizes, measured on the meta device before
        anything is allocated (`sizing.check_memory`)."""
        from kernelscope.kernels.sizing import meta_sizes

        ref = self.ref
        return meta_sizes(ref.get_inputs, ref.get_init_inputs, ref.Model, self._cast, self.dtype)

    def prepare(self, device: str) -> None:
        self.device = device
        self._built = {"reference": self._model(self.ref.Model), "candidate": self._model(self.candidate_cls)}
        if self.baseline_cls is not None:
            self._built["baseline"] = self._model(self.baseline_cls)

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        # The precision and any --problem-size show in the result's params (and a bf16 run is
        # refused under the interpreter, which computes bfloat16 wrongly).
        return [{**self.sizes, "name": "default", "precision": self.precision}]

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        torch.manual_seed(seed)
        inputs = (self._cast(x) for x in self.ref.get_inputs())
        return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self._built["reference"](*inputs)

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built["candidate"]
        return lambda *inputs: _no_grad(model, inputs)

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built.get("baseline", self._built["reference"])
        return lambda *inputs: _no_grad(model, inputs)

    def tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        return self.declared_tolerance

    def default_tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        value = KERNELBENCH_TOLERANCE[self.precision]
        return {"atol": value, "rtol": value}


def _no_grad(model: Any, inputs: tuple[Any, ...]) -> Any:
    with torch.no_grad():
        return model(*inputs)


def load_problem(
    reference_path: Path,
    candidate_path: Path,
    baseline_path: Path | None,
    entry: str,
    workspace: Path | None = None,
    sizes: dict[str, int] | None = None,
    precision: str | None = None,
) -> Problem:
    """The workspace's problem, by contract. `sizes` (`--problem-size`) replaces integer
    constants of the reference module; `precision` (`--precision`) is KernelBench's option."""
    if workspace is not None:  # layouts recognised by their files, not by the reference module
        from kernelscope.kernels.sol_execbench import SolExecBenchProblem, is_sol_workspace

        if is_sol_workspace(workspace):
            return SolExecBenchProblem.load(workspace, reference_path, candidate_path, baseline_path, entry)
    reference = load_module(reference_path, "reference", sizes)
    candidate = load_module(candidate_path, "candidate")
    baseline = load_module(baseline_path, "baseline") if baseline_path else None
    if hasattr(reference, "Model") and hasattr(reference, "get_inputs"):
        return KernelBenchProblem(reference, candidate, baseline, precision or "fp32", sizes)
    if precision not in (None, "fp32"):
        raise ProblemError(
            f"--precision {precision} is KernelBench's option; a native reference module chooses "
            "its dtypes in CONFIGS"
        )
    return NativeProblem(reference, candidate, baseline, entry)
