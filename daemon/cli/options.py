"""Command-line options more than one command takes, declared once (typer reads these
annotations at runtime, hence `Optional` rather than `X | None`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli.help_format import tidy_typer_help

tidy_typer_help()  # every command module imports this one: their help is tidied before it prints

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts and agents.")]
WorkspaceOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Optimization workspace directory.")]
DbOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--db", help="Database URL or SQLite path (default: KERNELSCOPE_DB_URL, config, XDG)."),
]
# One --force for every write a supervisor's workspace refuses (iterate, mask, unmask, update,
# mask-half, restart), with one text per meaning: each command's help says only what it does.
_FORCE_HELP = "Write even when an orchestrator drives the workspace (never its next version)"
ForceOpt = Annotated[bool, typer.Option("--force", help=f"{_FORCE_HELP}.")]
# mask-half and restart (which masks half first) also skip unreadable memory files with it
ForceMaskOpt = Annotated[
    bool, typer.Option("--force", help=f"{_FORCE_HELP}; also skip unreadable memory files.")
]
ForceIterateOpt = Annotated[
    bool,
    typer.Option("--force", help=f"{_FORCE_HELP}; also record a kernel.py identical to a recorded version."),
]
OptStr = Optional[str]  # noqa: UP045
OptInt = Optional[int]  # noqa: UP045
OptFloat = Optional[float]  # noqa: UP045
OptBool = Optional[bool]  # noqa: UP045
