"""One adapter per workspace contract, each a `Problem` in a module of its own (base, native,
kernelbench, sol_execbench). Which one reads a workspace is decided by the one rule in
`kernelscope.protocol.kinds` (the daemon passes its answer as `--adapter`; a runner started by
hand asks the same rule); this module only loads the class it names."""

from __future__ import annotations

import importlib
from pathlib import Path

from kernelscope.kernels.adapters.base import Problem, ProblemError, ProblemSource
from kernelscope.protocol.kinds import Folder, adapter_for


def adapter_class(adapter: str) -> type[Problem]:
    """`module:Class` -> the class (ProblemError when it cannot be loaded)."""
    module_name, _, class_name = adapter.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ProblemError(f"cannot load the adapter {adapter!r}: {exc}") from None
    if not (isinstance(found, type) and issubclass(found, Problem)):
        raise ProblemError(f"the adapter {adapter!r} is not a Problem class")
    return found


def load_problem(
    reference_path: Path,
    candidate_path: Path,
    baseline_path: Path | None,
    entry: str,
    workspace: Path | None = None,
    sizes: dict[str, int] | None = None,
    precision: str | None = None,
    adapter: str | None = None,
) -> Problem:
    """The workspace's problem, read by `adapter` (default: the one the kinds rule names).
    `sizes` (`--problem-size`) replaces integer constants of the reference module; `precision`
    (`--precision`) is KernelBench's option."""
    root = workspace if workspace is not None else reference_path.parent
    chosen = adapter or adapter_for(Folder(root, reference_path))
    source = ProblemSource(
        root, reference_path, candidate_path, baseline_path, entry, dict(sizes or {}), precision
    )
    return adapter_class(chosen).load(source)


__all__ = ["Problem", "ProblemError", "ProblemSource", "adapter_class", "load_problem"]
