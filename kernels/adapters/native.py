"""kernelscope's own contract (the `native` kind; documented in the README):

- the candidate (kernel.py) defines an entry point, by default `kernel_fn(*inputs)`, a plain
  Python function that launches the Triton kernels and returns the output tensor(s);
- reference.py defines `CONFIGS` (list of dicts with a "name"; optional `CPU_CONFIGS` used
  under the interpreter), `make_inputs(config, seed, device)` returning a tuple of
  arguments, `reference(*inputs)` (e.g. PyTorch eager), and optionally `flops(config)`,
  `bytes_moved(config)` and `TOLERANCE` / `tolerance(config)` (`{"rel_err": 0.01}` or
  `{"atol": ..., "rtol": ...}`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelscope.kernels.adapters.base import Problem, ProblemError, ProblemSource, entry_point, load_module


class NativeProblem(Problem):
    @classmethod
    def load(cls, source: ProblemSource) -> NativeProblem:
        if source.precision not in (None, "fp32"):
            raise ProblemError(
                f"--precision {source.precision} is KernelBench's option; a native reference module "
                "chooses its dtypes in CONFIGS"
            )
        reference = load_module(source.reference, "reference", source.sizes)
        candidate = load_module(source.candidate, "candidate")
        baseline = load_module(source.baseline, "baseline") if source.baseline else None
        return cls(reference, candidate, baseline, source.entry)

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
        return entry_point(module, self.entry, purpose, "set another name with --entry")

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

    def second_distribution_off(self) -> str | None:
        """On by default; the reference module may opt out (kernels/second_inputs.py)."""
        from kernelscope.kernels.second_inputs import declared_off

        return declared_off(self.ref)

    def domain_declared(self) -> str | None:
        from kernelscope.kernels.second_inputs import domain_declared

        return domain_declared(self.ref)

    def tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        value = self._optional("tolerance", config)
        return value if value is not None else getattr(self.ref, "TOLERANCE", None)
