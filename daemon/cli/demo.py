"""`kernelscope demo`: the main job on the embedded defaults (SQLite, the CPU interpreter
when there is no GPU)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt, JsonOpt
from kernelscope.daemon.engine.workflows.demo import run_demo

if TYPE_CHECKING:
    from kernelscope.daemon.engine.workflows.demo import DemoResult

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
    json_out: JsonOpt = False,
) -> None:
    """Create a workspace, record v0 and three measured improvements, mask half, show the lenses."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.store.config import has_password, public_url, read_without_db

    if mode not in ("auto", "gpu", "interpreter"):  # as iterate and bench word it
        raise typer.BadParameter("must be auto, gpu or interpreter", param_hint="--mode")
    # under --json, stdout is the one document: the progress lines go to stderr
    result = run_demo(
        directory, db, mode=mode, examples=examples, progress=_stderr if json_out else output.info
    )
    passed = any(iteration.passed for iteration in result.iterations)
    if json_out:
        if not passed:
            raise DataError("every iteration of the demo failed its gate: see the lines above, on stderr")
        output.print_json(_document(result, public_url(result.db_url)))
        return
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
    # The commands below read the store their --db names, else the one resolve_db_url gives
    # (KERNELSCOPE_DB_URL, the config file, the default): a demo on another store says so, and
    # its suggested commands carry its --db, unless its URL holds a password, which is never
    # shown (a masked --db could not log in): the user exports their own URL instead.
    shown = public_url(result.db_url)
    own_store = ""
    if read_without_db(result.db_url):
        output.info(f"Experiments: {shown} (every command reads it: the store they read without --db)")
    elif has_password(result.db_url):
        output.info(
            f"Experiments: {shown} (not the store commands read without --db; its password is not "
            "shown: export KERNELSCOPE_DB_URL set to your --db URL before the commands below)"
        )
    else:
        own_store = f" --db {shlex.quote(shown)}"
        output.info(
            f"Experiments: {shown} (not the store commands read without --db: they read it with "
            f"--db {shlex.quote(shown)}, or with KERNELSCOPE_DB_URL={shlex.quote(shown)} exported)"
        )
    hint = path_hint()
    if hint:
        output.info(hint)
    where = shlex.quote(str(result.workspace))
    output.info("Explore it:")
    output.info(f"  kernelscope memory summary -w {where}")
    output.info(f"  kernelscope exp summary -w {where}{own_store}")
    output.info(f"  kernelscope bench -w {where}")
    output.info(f"  cd {where} && git log --oneline")
    output.info("Editors: start `kernelscope serve` from your editor's LSP client with this folder open")
    output.info("(see the README's editor section); the lens texts above are what it shows.")
    if not passed:
        raise DataError("every iteration of the demo failed its gate: see the table above")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _document(result: DemoResult, db_url: str) -> dict[str, Any]:
    """`demo --json`: where it is, each version with its verdict and score, what was masked,
    and the lens texts an editor shows."""
    return {
        "workspace": str(result.workspace),
        "db_url": db_url,
        "iterations": result.iterations,
        "scores": result.scores,
        "masked": result.mask.masked if result.mask else [],
        "mask": result.mask,
        "file_lens": result.file_lens,
        "kernel_lenses": result.kernel_lenses,
    }
