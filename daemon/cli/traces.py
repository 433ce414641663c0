"""`kernelscope import-traces FILE`: bring FlashInfer-Bench / SOL-ExecBench Trace records (JSON
lines, what `kernelscope bench --trace` writes too) into the experiment store, so `kernelscope
exp list/top/summary` and the history views show them beside kernelscope's own runs, marked
as imported (tags "imported", "trace", "source:<file>"). The conversion and its rules are in
`kernelscope.daemon.engine.store.traces`.

Exit statuses: 0 imported (or every record already was), 1 usage error, 2 the file is
unreadable or a record is invalid: the message names the line, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt, JsonOpt
from kernelscope.daemon.engine import UsageError


def import_traces_command(
    path: Annotated[Path, typer.Argument(help="JSON-lines file of Trace records.", show_default=False)],
    workspace: Annotated[
        Optional[Path],  # noqa: UP045 - typer reads the annotation at runtime
        typer.Option(
            "--workspace",
            "-w",
            help="Workspace the imported experiments belong to (its history shows them); default: none.",
        ),
    ] = None,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Import FlashInfer-Bench / SOL-ExecBench Trace records (JSON lines) as experiments.

    Every record is validated first; one bad line fails the import, names the line, and writes
    nothing. Re-importing a file adds nothing (ids are derived from the records).
    """
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.store.traces import import_traces

    if workspace is not None and not workspace.expanduser().is_dir():
        raise UsageError(f"--workspace {workspace} is not a directory")
    counts = import_traces(ExperimentStore(db), path, workspace)
    where = f" into {counts['workspace']}" if counts["workspace"] else ""
    skipped = f", {counts['workload_only']} workload-only skipped" if counts["workload_only"] else ""
    output.report(
        json_out,
        counts,
        f"{counts['inserted']} imported, {counts['skipped']} already present{skipped}{where} "
        f"(from {counts['file']}; tag: imported)",
    )
