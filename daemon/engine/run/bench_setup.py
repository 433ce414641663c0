"""What a benchmark request names, checked before any process starts: the reference module
(`--reference`, the README block's, reference.py) and what to say where there is none, the
problem sizes and precision, and the gate of a kind measured by its own evaluator. Each
refusal is a `UsageError`: a setup error, no verdict on the kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import UsageError
from kernelscope.protocol import kinds

PRECISIONS = ("fp32", "fp16", "bf16")
# Where the contract is documented, for a user who installed kernelscope with pip (no docs/):
# the documentation site's page by its title and the section by its heading.
CONTRACT_PLACE = (
    'the "Contract" section of the "Benchmark and correctness harness" page of kernelscope\'s '
    "documentation, docs/harness.md in its source"
)


def reference_path(given: Path | None, settings: dict[str, Any], workspace: Path) -> Path:
    """`--reference FILE` (any name: a KernelBench problem keeps its own) relative to the
    current directory when it is there, else to the workspace; else the README block's
    `"reference"` (relative to the workspace); else `reference.py`."""
    if given is not None:
        path = Path(given).expanduser()
        if not path.is_absolute() and not path.exists():
            path = workspace / path
        if not path.is_file():
            raise UsageError(
                f"reference {given} does not exist (looked in the current directory and in {workspace})"
            )
        return path.resolve()
    named = settings.get("reference", "reference.py")
    if not isinstance(named, str) or not named:
        raise UsageError('the README block\'s "bench": {"reference": ...} must be a file name')
    return (workspace / Path(named).expanduser()).resolve()


def no_reference_message(reference: Path | None, spec: kinds.KindSpec) -> str:
    """Why nothing ran where the reference module is missing and no gate command is named,
    and where the contract it would follow is documented (the workspace may have no README,
    and the project's says nothing of it); a kind measured by its own gate command
    (atrex-v0.1) is told that this is its other way."""
    message = (
        f"no reference module {reference}: kernelscope's harness checks and times kernel.py against "
        f"one ({CONTRACT_PLACE}); name another file with --reference FILE"
    )
    if spec.name == kinds.ATREX_V01.name:
        message += (
            f"; or, as this {spec.name} workspace is measured by its own gate command, name it with "
            "--gate-command (e.g. --gate-command 'python test_kernel.py')"
        )
    return message + "; nothing was run"


def problem_settings(
    given: dict[str, int], precision: str | None, settings: dict[str, Any]
) -> tuple[dict[str, int], str | None]:
    """`--problem-size` (`given`) over the README block's `"problem_sizes"`, and the precision
    (`--precision`, else the block's); checked here so a bad value is a usage error before any
    process starts."""
    sizes = settings.get("problem_sizes", {})
    if not isinstance(sizes, dict) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(v, int) and not isinstance(v, bool)
        for k, v in sizes.items()
    ):
        raise UsageError('the README block\'s "bench": {"problem_sizes": ...} must map names to integers')
    for name, value in given.items():
        if not name.isidentifier() or isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"problem size {name}={value!r}: expected an identifier and an integer")
    precision = precision or settings.get("precision")
    if precision is not None and precision not in PRECISIONS:
        raise UsageError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    return {**sizes, **given}, precision


def own_gate_command(spec: kinds.KindSpec, folder: kinds.Folder) -> str:
    """The gate a kind with its own evaluator runs when none is named; a setup error, before
    anything runs, where that evaluator cannot run (a generalized Atrex-Bench workspace) or
    is missing."""
    own = spec.own_gate
    assert own is not None
    why = own.unavailable(folder)
    if why:
        raise UsageError(why)
    if not folder.has(own.script):
        raise UsageError(
            f"this {spec.name} workspace is measured by its own evaluator, {own.script}, which it "
            "lacks (kernelscope's harness does not read this kind); nothing was run. Name the "
            "evaluator with --gate-command"
        )
    return own.command
