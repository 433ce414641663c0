"""What every adapter gives the runner: configurations, inputs, the reference, the candidate
and the baseline of a workspace's problem, whatever contract its files follow. Runs in the
runner's child process only."""

from __future__ import annotations

import abc
import importlib.util
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ProblemError(Exception):
    """The workspace does not follow the contract: a setup error where loading the problem
    raises it (the runner's `load_problem`). Raised later, in a configuration (its inputs, the
    candidate's outputs), it is the run's `exception` like any other: the candidate's code has
    run by then and can raise it, or make the adapter raise it, so it cannot be told from the
    workspace's fault (kernels/fault_origin.py). Raised by a module's own code while
    `load_module` runs it, it is that module's failed import, not setup: see `KernelImportError`."""


class KernelImportError(Exception):
    """A ProblemError a kernel's module (candidate, baseline, parent, or one they import) raised
    while it ran: importlib reaches the class, and as setup (no verdict) a workspace's timed gate
    command's numbers replaced the harness's result (daemon/engine/run/bench.py), a PASS for
    any kernel. Not a ProblemError, so the runner reports it as the import failure it is."""


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
            try:
                spec.loader.exec_module(module)
            except ProblemError as exc:  # the module's own code raised it
                if purpose == "reference":  # the workspace's contract, read before any kernel
                    raise
                raise KernelImportError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def entry_point(module: Any, name: str, purpose: str, hint: str) -> Callable[..., Any]:
    """The module's function `name` (ProblemError naming the file, and `hint`, when absent)."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ProblemError(
            f"{purpose} {getattr(module, '__file__', '?')} has no entry point {name}() ({hint})"
        )
    return fn


class Problem(abc.ABC):
    """What the runner needs, whatever the contract."""

    kind = "native"
    # The right values in other strides than the reference's fail (`wrong_layout`): kernelscope's
    # own rule. An upstream evaluator that compares values only turns it off.
    layout_checked = True
    # Input draws the gate checks when `--seeds` is not given: the upstream evaluator's own
    # count where the contract has one (KernelBench 5, SOL-ExecBench 10), kernelscope's 3 else.
    correctness_trials = 3
    # An input the reference changes in place is part of the result only where the upstream
    # evaluator means it (kernels/input_changes.py): destination passing, as SOL-ExecBench's.
    # Elsewhere (KernelBench, native) it is part of it only where the reference returns it.
    inputs_in_result = False

    def correctness_seeds(self, count: int) -> list[int]:
        """The `count` seeds the gate hands `make_inputs`, one input draw each."""
        return list(range(count))

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

    def second_distribution_off(self) -> str | None:
        """Why the signed heavy-tailed input check (kernels/second_inputs.py) does not run
        for this problem; None: it runs. Off by default: an evaluator that draws its own
        inputs (SOL-ExecBench) decides by them."""
        return "off: this workspace kind's evaluator draws its own inputs"

    def domain_declared(self) -> str | None:
        """Where the problem declares that its domain excludes inputs other than its own draws
        (kernels/second_inputs.py's opt-out), says so: its timed inputs are not perturbed
        (kernels/timed_checks.py). None: not declared."""
        return None

    def default_tolerance(self, config: dict[str, Any]) -> dict[str, float] | None:
        """The contract's own default, used when neither the reference module nor the README
        sets one (None: the gate's per-dtype defaults)."""
        return None

    @classmethod
    @abc.abstractmethod
    def load(cls, source: ProblemSource) -> Problem:
        """Import the source's modules and read the problem (ProblemError: not this contract)."""


@dataclass(frozen=True)
class ProblemSource:
    """Where a problem's files are and the runner's options that shape it."""

    workspace: Path
    reference: Path
    candidate: Path
    baseline: Path | None
    entry: str
    sizes: dict[str, int] = field(default_factory=dict)  # --problem-size
    precision: str | None = None  # --precision (KernelBench's option)
