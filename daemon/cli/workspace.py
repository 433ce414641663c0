"""`kernelscope workspace`: what kernelscope understands of a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt
from kernelscope.daemon.engine import counted


def workspace_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    db: DbOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the WorkspaceSummary as JSON.")] = False,
) -> None:
    """Show the workspace: targets, stop conditions, kernels, memory, and its experiment store."""
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.store.adopt import adopt
    from kernelscope.daemon.engine.store.config import public_url
    from kernelscope.daemon.engine.views.command_answers import masked_counts
    from kernelscope.daemon.engine.workspace.discovery import require_workspace
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws = Workspace(require_workspace(workspace))
    store = ExperimentStore(db)
    # one store per user: experiments of this workspace recorded elsewhere (an older demo's
    # store, a --db) are imported here, never dropped
    records, _ = ws.memory.read_all(include_masked=True)
    imported = adopt(ws.root, records, store)
    info = ws.summary()
    info.store = public_url(store.url)
    info.imported = {public_url(url): count for url, count in imported.items()}
    if json_out:
        output.print_json(info)
        return
    output.info(f"Workspace: {info.root}  (git: {info.git_root or 'none'})")
    supervisor = info.profile.supervisor if info.profile else None
    output.info(
        f"Kind: {info.kind}; supervisor: "
        + (f"{supervisor.name} (kernelscope only observes)" if supervisor else "none")
    )
    output.info(f"Experiment store: {info.store}")
    for url, count in info.imported.items():
        output.info(
            f"Imported {counted(count, 'experiment')} of this workspace from {url}, where they were recorded"
        )
    if info.readme:
        t = info.readme.target
        output.info(
            f"Target: platform={t.platform or '-'} arch={t.arch or '-'} framework={t.framework or '-'} "
            f"dtype={(info.profile.dtype if info.profile else t.dtype) or '-'} "
            f"kernel type={t.kernel_type or '-'}"
        )
        for c in info.readme.stop_conditions:
            output.info(f"Stop condition: {c.kind} {c.comparator} {c.value:g} {c.unit} (line {c.line})")
        if info.readme.correctness_threshold:
            th = info.readme.correctness_threshold
            output.info(f"Correctness: {th.metric} {th.comparator} {th.value:g}")
    if info.kernels and not info.kernels.error:
        for k in info.kernels.kernels:
            decorators = ", ".join(k.decorators)
            output.info(f"Kernel: {k.name} (def line {k.def_line}, {decorators})")
    output.info(
        f"Memory: {counted(len(info.versions), 'version')}, {masked_counts(info)}, next {info.next_version}"
    )
    for message in info.warnings:
        output.warn(message)
