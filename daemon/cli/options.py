"""Command-line options more than one command takes, declared once (typer reads these
annotations at runtime, hence `Optional` rather than `X | None`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts and agents.")]
WorkspaceOpt = Annotated[Path, typer.Option("--workspace", "-w", help="Optimization workspace directory.")]
DbOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--db", help="Database URL or SQLite path (default: KERNELSCOPE_DB_URL, config, XDG)."),
]
# One --force for every write a supervisor's workspace refuses (iterate, mask, unmask, mask-half,
# restart); mask-half and restart also skip unreadable memory files with it.
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Write even when an orchestrator drives the workspace (never its next version); "
        "mask-half and restart also skip unreadable memory files, iterate records kernel.py "
        "identical to a recorded version.",
    ),
]
OptStr = Optional[str]  # noqa: UP045
OptInt = Optional[int]  # noqa: UP045
OptFloat = Optional[float]  # noqa: UP045
OptBool = Optional[bool]  # noqa: UP045
