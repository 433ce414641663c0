"""`kernelscope check [FILE]`: what the daemon's diagnostics would say about a kernel.py text,
for agents without an LSP client (Codex, scripts): a recorded version with the same code (not
worth GPU time), a close one with the values tried at the changed meta-parameters, what the
static rules find (KernelBench's and kernelscope's: the cheats `bench` would fail before
running), and whether re-benchmark on save is off. Nothing is written and no workspace code
runs; skills call it before spending GPU time.

Exit status 3 when it finds an error (a static rule `bench` would fail the text on), as `bench`
exits on a failed gate, so `kernelscope check && kernelscope bench` stops there; 3 too when
the text does not parse (bench fails it as a compile error), with the daemon's does_not_parse
notice (a warning beside the editor's own syntax error) and nothing else checked; 0 otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt, JsonOpt
from kernelscope.daemon.engine import counted
from kernelscope.protocol import workspace_files

OptPath = Optional[Path]  # noqa: UP045


def check_command(
    file: Annotated[
        OptPath,
        typer.Argument(help="The text to check (default: the workspace's kernel.py).", show_default=False),
    ] = None,
    workspace: Annotated[
        OptPath,
        typer.Option("--workspace", "-w", help="Workspace directory (default: the one holding FILE, or .)."),
    ] = None,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check kernel.py against the static rules and every recorded version before spending GPU time."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.history.service import HistoryService
    from kernelscope.daemon.engine.views.diagnostics import (
        static_notices,
        text_notices,
        unreadable_notice,
        untrusted_notice,
    )
    from kernelscope.daemon.engine.workspace.discovery import require_workspace, workspace_holding
    from kernelscope.daemon.engine.workspace.kinds import declared_framework, detect_kind, undeclared_triton
    from kernelscope.daemon.engine.workspace.user_config import user_settings
    from kernelscope.daemon.engine.workspace.workspace import Workspace
    from kernelscope.protocol.settings import distrust

    if workspace is None:
        start = file.resolve().parent if file is not None else Path.cwd()
        workspace = workspace_holding(start) or start
    root = require_workspace(workspace)
    source = file if file is not None else root / "kernel.py"
    try:
        text = workspace_files.read_text(source, errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read {source}: {exc.strerror or exc}") from None
    readme = Workspace(root).readme() if (root / "README.md").is_file() else None
    declared = declared_framework(root, readme) is not None
    undeclared = undeclared_triton(root, readme, text)
    static = static_notices(text, detect_kind(root, readme), True, declared, undeclared, source.name)
    # the daemon's notice, the one parse rule (a warning in the editor): bench fails the text as a
    # compile error, and nothing else is checked (no history compared: null, not 0)
    unparsed = any(n.code == "does_not_parse" for n in static)
    notices, identical, tried, unreadable = list(static), None, [], []
    compared: int | None = None
    if not unparsed:
        service = HistoryService(root, db_url=db)
        notices, identical = text_notices(service, text, whole=True)  # asked for: any size
        history = service.history()
        unreadable = history.unreadable
        left_out = unreadable_notice(unreadable)  # (the editor says it on each record instead)
        notices += [left_out, *static] if left_out is not None else static
        user, folder = user_settings(output.warn)
        why = distrust(user, root) if folder.bench_on_save else None  # the config file's trust alone
        if why is not None:
            notices.append(untrusted_notice(str(root), why))
        tried = [hint for hint in service.tried(text) if hint.values]
        # what "nothing matches" rests on: an agent must tell new code from a history with no code
        compared = sum(1 for v in history.versions.values() if v.kernel_blob and not v.masked)
    errors = unparsed or any(n.severity == "error" for n in notices)
    if json_out:
        output.print_json(
            {
                "workspace": str(root),
                "file": str(source),
                "identical": identical,
                "versions_compared": compared,
                "unreadable_records": unreadable,  # not compared (a notice says so)
                "notices": [
                    {"severity": n.severity, "code": n.code, "message": n.message, "line": n.line}
                    for n in notices
                ],
                "tried": [
                    {"line": h.line + 1, "label": h.label, "value": h.value, "hint": h.hint} for h in tried
                ],
            }
        )
        _exit(errors)
        return
    for notice in notices:
        where = f"{source.name}:{notice.line}: " if notice.line else ""
        output.info(f"{where}{notice.severity}: {notice.message} [{notice.code}]")
    if unparsed:
        output.info(
            f"nothing else was checked: {source.name} does not parse, and bench would fail it "
            "as a compile error (exit 3)"
        )
    elif not notices and not compared:
        output.info(
            "no recorded version's code to compare with (no unmasked memory/v*.json whose kernel.py "
            "git holds): kernelscope cannot tell whether this was tried"
        )
    elif not notices:
        output.info(
            f"nothing recorded matches {source.name} ({counted(compared or 0, 'version')} compared): new code"
        )
    for hint in tried:
        output.info(f"{source.name}:{hint.line + 1}: {hint.label}={hint.value} {hint.hint}")
    _exit(errors)


def _exit(errors: bool) -> None:
    """Exit 3 after the report when it holds an error: `bench` would fail the text (its exit
    status for a failed gate)."""
    from kernelscope.protocol.bench import EXIT_GATE_FAILED

    if errors:
        raise typer.Exit(EXIT_GATE_FAILED)
