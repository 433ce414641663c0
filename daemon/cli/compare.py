"""`kernelscope compare vA vB`: two versions side by side: the kernel.py diff, numbers per
configuration (with intervals where measured), gates and actions, as Markdown or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import OptStr


def compare_command(
    version_a: Annotated[str, typer.Argument(help="The earlier version, e.g. v2.")],
    version_b: Annotated[str, typer.Argument(help="The later version, e.g. v4.")],
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    db: Annotated[OptStr, typer.Option("--db", help="Experiment database URL or SQLite path.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the VersionComparison as JSON.")] = False,
) -> None:
    """Compare two versions: code diff, per-configuration deltas, gates and actions."""
    from kernelscope.daemon.engine.history.service import HistoryService
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    comparison = HistoryService(require_workspace(workspace), db_url=db).compare(version_a, version_b)
    if json_out:
        output.print_json(comparison)
        return
    print(comparison.markdown, end="")
