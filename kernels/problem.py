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
from typing import Any

import torch


class ProblemError(Exception):
    """The workspace does not follow the contract (a setup error)."""


def load_module(path: Path, purpose: str) -> Any:
    """Import a file as a fresh module (a unique name, so candidate and baseline never mix)."""
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


class KernelBenchProblem(Problem):
    """A KernelBench-style problem: `Model`/`get_inputs`/`get_init_inputs` vs `ModelNew`."""

    kind = "kernelbench"

    def __init__(self, reference_module: Any, candidate_module: Any, baseline_module: Any | None) -> None:
        if not hasattr(candidate_module, "ModelNew"):
            raise ProblemError("the candidate does not define ModelNew (KernelBench contract)")
        self.ref = reference_module
        self.candidate_cls = candidate_module.ModelNew
        self.baseline_cls = getattr(baseline_module, "ModelNew", None) if baseline_module else None
        self._built: dict[str, Any] = {}
        self.device = "cpu"

    def _model(self, cls: Any) -> Any:
        torch.manual_seed(0)  # same weights for reference, baseline and candidate
        return cls(*self.ref.get_init_inputs()).to(self.device).eval()

    def prepare(self, device: str) -> None:
        self.device = device
        self._built = {"reference": self._model(self.ref.Model), "candidate": self._model(self.candidate_cls)}
        if self.baseline_cls is not None:
            self._built["baseline"] = self._model(self.baseline_cls)

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        return [{"name": "default"}]

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        torch.manual_seed(seed)
        return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in self.ref.get_inputs())

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self._built["reference"](*inputs)

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built["candidate"]
        return lambda *inputs: _no_grad(model, inputs)

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built.get("baseline", self._built["reference"])
        return lambda *inputs: _no_grad(model, inputs)


def _no_grad(model: Any, inputs: tuple[Any, ...]) -> Any:
    with torch.no_grad():
        return model(*inputs)


def load_problem(
    reference_path: Path,
    candidate_path: Path,
    baseline_path: Path | None,
    entry: str,
    workspace: Path | None = None,
) -> Problem:
    if workspace is not None:  # layouts recognised by their files, not by the reference module
        from kernelscope.kernels.sol_execbench import SolExecBenchProblem, is_sol_workspace

        if is_sol_workspace(workspace):
            return SolExecBenchProblem.load(workspace, reference_path, candidate_path, baseline_path, entry)
    reference = load_module(reference_path, "reference")
    candidate = load_module(candidate_path, "candidate")
    baseline = load_module(baseline_path, "baseline") if baseline_path else None
    if hasattr(reference, "Model") and hasattr(reference, "get_inputs"):
        return KernelBenchProblem(reference, candidate, baseline)
    return NativeProblem(reference, candidate, baseline, entry)
