"""A workspace kind that kernelscope does not ship, defined by this one module: a folder with
`toy_problem.json` (`{"sizes": [...]}`) whose reference.py defines `double(x)`, measured by the
adapter below against kernel.py's `kernel_fn(x)`. Importing the module registers the kind;
tests/engine/test_kinds.py shows that the daemon names it and the benchmark child reads it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kernelscope.kernels.adapters.base import Problem, ProblemError, ProblemSource, load_module
from kernelscope.protocol.kinds import KindSpec, register

TOY = KindSpec(
    name="toy",
    matches=lambda folder: folder.has("toy_problem.json"),
    harness="the toy adapter: one configuration per size in toy_problem.json, reference.py's double(x)",
    adapter="tests.support.toy_kind:ToyProblem",
    goal="double a vector fast",
)
register(TOY)


class ToyProblem(Problem):
    """The adapter (torch is imported by the benchmark child only, in the methods)."""

    kind = "toy"

    def __init__(self, sizes: list[int], reference: Any, candidate: Any) -> None:
        self.sizes, self.ref, self.candidate_fn = sizes, reference, candidate.kernel_fn

    @classmethod
    def load(cls, source: ProblemSource) -> Problem:
        spec = json.loads((source.workspace / "toy_problem.json").read_text())
        if not isinstance(spec.get("sizes"), list):
            raise ProblemError('toy_problem.json needs "sizes": [...]')
        return cls(
            spec["sizes"],
            load_module(source.reference, "reference"),
            load_module(source.candidate, "candidate"),
        )

    def configs(self, interpreter: bool) -> list[dict[str, Any]]:
        return [{"name": f"n={n}", "n": n} for n in self.sizes]

    def make_inputs(self, config: dict[str, Any], seed: int, device: str) -> tuple[Any, ...]:
        import torch

        generator = torch.Generator().manual_seed(seed)
        return (torch.randn(config["n"], generator=generator).to(device),)

    def reference(self, config: dict[str, Any], inputs: tuple[Any, ...]) -> Any:
        return self.ref.double(*inputs)

    def candidate(self, config: dict[str, Any]) -> Callable[..., Any]:
        return self.candidate_fn

    def baseline(self, config: dict[str, Any]) -> Callable[..., Any]:
        return self.ref.double
