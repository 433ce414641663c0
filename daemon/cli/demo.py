"""`kernelscope demo`: the main job on the embedded defaults (SQLite, the CPU interpreter
when there is no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt
from kernelscope.daemon.engine.workflows.demo import run_demo

OptPath = Optional[Path]  # noqa: UP045 - typer reads the annotation at runtime


def path_hint() -> str | None:
    """How to put `kernelscope` on PATH, when the command the demo advises would not be found
    (scripts/demo.sh runs it from .venv/bin, which a new shell does not have on PATH)."""
    import shutil
    import sys

    here = Path(sys.executable).parent
    found = shutil.which("kernelscope")
    if found and Path(found).parent.resolve() == here.resolve():
        return None
    return (
        f'`kernelscope` is not on your PATH yet: run `export PATH="{here}:$PATH"` '
        f"(or `source {here}/activate`) first"
    )


def demo_command(
    directory: Annotated[
        OptPath, typer.Option("--dir", help="Where to create the demo (default: a temp dir).")
    ] = None,
    db: DbOpt = None,
    mode: Annotated[str, typer.Option("--mode", help="auto, gpu or interpreter.")] = "auto",
    examples: Annotated[
        OptPath, typer.Option("--examples", help="The examples/ folder of a checkout.")
    ] = None,
) -> None:
    """Create a workspace, record v0 and three measured improvements, mask half, show the lenses."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.store.config import public_url

    if mode not in ("auto", "gpu", "interpreter"):  # as iterate and bench word it
        raise typer.BadParameter("must be auto, gpu or interpreter", param_hint="--mode")
    result = run_demo(directory, db, mode=mode, examples=examples, progress=output.info)
    output.info("")
    # One score per version, the lenses' ("score vs v0": the in-run geometric-mean speedup);
    # a ratio of two recorded latencies would be labelled as one, never as a speedup.
    output.print_table(f"{result.workspace.name}: memory", result.table_columns, result.table_rows)
    output.info("")
    output.info("Code lenses an editor shows in kernel.py:")
    output.info(f"  [top of file] {result.file_lens}")
    for kernel, text in result.kernel_lenses.items():
        output.info(f"  [above {kernel}] {text}")
    output.info("")
    output.info(f"Workspace: {result.workspace}")
    output.info(f"Experiments: {public_url(result.db_url)} (your store: every command reads it)")
    hint = path_hint()
    if hint:
        output.info(hint)
    output.info("Explore it:")
    output.info(f"  kernelscope memory summary -w {result.workspace}")
    output.info(f"  kernelscope exp summary -w {result.workspace}")
    output.info(f"  kernelscope bench -w {result.workspace}")
    output.info(f"  cd {result.workspace} && git log --oneline")
    output.info("Editors: start `kernelscope serve` from your editor's LSP client with this folder open")
    output.info("(see the README's editor section); the lens texts above are what it shows.")
    if not any(iteration.passed for iteration in result.iterations):
        raise DataError("every iteration of the demo failed its gate: see the table above")
