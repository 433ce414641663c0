"""The KernelBench contract: the reference file defines `Model`, `get_inputs()` and
`get_init_inputs()`; the candidate defines `ModelNew` with the same constructor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kernelscope.kernels.adapters.base import Problem, ProblemError, ProblemSource, load_module

if TYPE_CHECKING:
    from kernelscope.kernels.sizing import ProblemSizes


# KernelBench's precisions and its correctness tolerance per precision, used as both atol and
# rtol (kernelbench/eval.py: get_torch_dtype_from_string, get_tolerance_for_precision).
KERNELBENCH_PRECISIONS: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}
KERNELBENCH_TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
# eval_kernel_against_ref's seed_num (weights, init inputs, and the trials' seeds drawn from it)
# and num_correct_trials as its scripts pass it (eval_from_generations.py, run_and_check.py).
KERNELBENCH_SEED = 42
KERNELBENCH_TRIALS = 5


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
    layout_checked = False  # eval.py compares with torch.allclose after a shape check: values only
    correctness_trials = KERNELBENCH_TRIALS

    @classmethod
    def load(cls, source: ProblemSource) -> KernelBenchProblem:
        reference = load_module(source.reference, "reference", source.sizes)
        candidate = load_module(source.candidate, "candidate")
        baseline = load_module(source.baseline, "baseline") if source.baseline else None
        return cls(reference, candidate, baseline, source.precision or "fp32", source.sizes)

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
        """Built as KernelBench builds it, and left in training mode as its eval leaves it (it
        never calls `.eval()`): BatchNorm normalizes with the batch's statistics, so a copy of
        the input does not pass 33_BatchNorm, and Dropout is active."""
        torch.manual_seed(KERNELBENCH_SEED)  # the same weights as KernelBench's, for every model
        init_inputs = [self._cast(x) for x in self.ref.get_init_inputs()]
        init_inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in init_inputs]
        torch.manual_seed(KERNELBENCH_SEED)  # reseeded before construction, as eval.py does
        return cls(*init_inputs).to(device=self.device, dtype=self.dtype)

    def estimate_sizes(self) -> ProblemSizes:
        """One seed's input, output and parameter sizes, measured on the meta device before
        anything is allocated (`sizing.check_memory`)."""
        from kernelscope.kernels.sizing import meta_sizes

        ref = self.ref
        return meta_sizes(self._inputs, ref.get_init_inputs, ref.Model, self._cast, self.dtype)

    def prepare(self, device: str) -> None:
        self.device = device
        self._built = {"reference": self._model(self.ref.Model), "candidate": self._model(self.candidate_cls)}
        if self.baseline_cls is not None:
            self._built["baseline"] = self._model(self.baseline_cls)

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        # The precision and any --problem-size show in the result's params (and a bf16 run is
        # refused under the interpreter, which computes bfloat16 wrongly).
        return [{**self.sizes, "name": "default", "precision": self.precision}]

    def correctness_seeds(self, count: int) -> list[int]:
        """KernelBench's trial seeds (`run_and_check_correctness`: drawn with `torch.randint`
        after `torch.manual_seed(42)`), so trial k gets the inputs KernelBench's trial k gets."""
        generator = torch.Generator().manual_seed(KERNELBENCH_SEED)
        return [int(torch.randint(0, 2**32 - 1, (1,), generator=generator)) for _ in range(count)]

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        torch.manual_seed(seed)
        inputs = (self._cast(x) for x in self._inputs())
        return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)

    def _inputs(self) -> list[Any]:
        """`get_inputs()`; where it puts its tensors on a GPU this machine lacks (KernelBench's
        prompt examples call `.cuda()`, prompts/model_ex_add.py @423217d; its level problems
        build CPU tensors, which its harness moves), a ProblemError that says so and what to do
        rather than torch's bare "Torch not compiled with CUDA enabled"."""
        try:
            return list(self.ref.get_inputs())
        except (AssertionError, RuntimeError) as exc:
            if torch.cuda.is_available() or "cuda" not in str(exc).lower():
                raise
            name = Path(getattr(self.ref, "__file__", None) or "the reference module").name
            raise ProblemError(
                f"get_inputs() in {name} puts its tensors on a CUDA device, and this machine has "
                f"none ({type(exc).__name__}: {exc}): the harness moves the inputs to the device "
                "it runs on itself, so build them on the CPU as KernelBench's level problems do "
                "(drop the .cuda() or device='cuda' there), or run on a machine with a GPU"
            ) from None

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self._built["reference"](*inputs)

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built["candidate"]
        return lambda *inputs: _no_grad(model, inputs)

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        model = self._built.get("baseline", self._built["reference"])
        return lambda *inputs: _no_grad(model, inputs)

    def second_distribution_off(self) -> str | None:
        """On by default; the reference module may opt out (kernels/second_inputs.py)."""
        from kernelscope.kernels.second_inputs import declared_off

        return declared_off(self.ref)

    def domain_declared(self) -> str | None:
        from kernelscope.kernels.second_inputs import domain_declared

        return domain_declared(self.ref)

    def tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        return self.declared_tolerance

    def default_tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        value = KERNELBENCH_TOLERANCE[self.precision]
        return {"atol": value, "rtol": value}


def _no_grad(model: Any, inputs: tuple[Any, ...]) -> Any:
    with torch.no_grad():
        return model(*inputs)
