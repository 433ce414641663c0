"""`kernelscope blame`: each line of kernel.py with the version that introduced it and what
that version measured, plus the values already tried at each meta-parameter and whether the
kernel as it is now was already measured or failed.

Reads the working tree's kernel.py (or `--file`): lines not in HEAD's committed kernel.py are
reported as unsaved/unmeasured. Nothing is written and no workspace code runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import JsonOpt, OptStr
from kernelscope.protocol import workspace_files

OptPath = Optional[Path]  # noqa: UP045
CODE_WIDTH = 48


def blame_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    file: Annotated[
        OptPath, typer.Option("--file", help="Blame this text instead of the workspace's kernel.py.")
    ] = None,
    db: Annotated[OptStr, typer.Option("--db", help="Experiment database URL or SQLite path.")] = None,
    include_masked: Annotated[
        bool, typer.Option("--include-masked", help="Show masked versions' numbers too.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Show, for each line of kernel.py, the version that introduced it and its measured effect."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.history.service import HistoryService
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    service = HistoryService(require_workspace(workspace), db_url=db)
    source = file if file is not None else service.root / "kernel.py"
    try:
        buffer = workspace_files.read_text(source, errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read {source}: {exc.strerror or exc}") from None
    history = service.history()
    lines = service.blame(buffer, include_masked=include_masked)
    tried = service.tried(buffer, include_masked=include_masked)
    check = service.fingerprint(buffer, include_masked=include_masked)
    if json_out:
        output.print_json(
            {
                "workspace": str(service.root),
                "head": history.head,
                "file": str(source),
                "lines": lines,
                "tried": tried,
                "fingerprint": check,
                "messages": history.messages,
            }
        )
        return
    for message in history.messages:
        output.warn(message)
    text_lines = buffer.splitlines()
    for entry in lines:
        code = text_lines[entry.line] if entry.line < len(text_lines) else ""
        code = code if len(code) <= CODE_WIDTH else code[: CODE_WIDTH - 1] + "…"
        output.info(f"{entry.line + 1:>5}  {code:<{CODE_WIDTH}}  {entry.hint}")
    if tried:
        output.info("")
        output.info("Values already tried:")
        for hint in tried:
            output.info(
                f"{hint.line + 1:>5}:{hint.character + 1:<4} {hint.label} = {hint.value}  {hint.hint}"
            )
    if check.verdict or check.error:
        output.info("")
        output.info(f"kernel.py as it is: {check.verdict or check.error}")
