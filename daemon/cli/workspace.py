"""`kernelscope workspace`: what kernelscope understands of a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelscope.daemon.cli import output


def workspace_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print the WorkspaceSummary as JSON.")] = False,
) -> None:
    """Show the workspace: targets, stop conditions, kernels, memory."""
    from kernelscope.daemon.engine.workspace.discovery import require_workspace
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    info = Workspace(require_workspace(workspace)).summary()
    if json_out:
        output.print_json(info)
        return
    output.info(f"Workspace: {info.root}  (git: {info.git_root or 'none'})")
    if info.readme:
        t = info.readme.target
        output.info(
            f"Target: platform={t.platform or '-'} arch={t.arch or '-'} framework={t.framework or '-'} "
            f"dtype={t.dtype or '-'} kernel type={t.kernel_type or '-'}"
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
        f"Memory: {len(info.versions)} versions, {info.masked_count} masked, next {info.next_version}"
    )
    for message in info.warnings:
        output.warn(message)
