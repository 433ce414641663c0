"""Output helpers shared by CLI commands: JSON for scripts and agents, rich tables for
people, errors on stderr. Keeping this in one place keeps `--json` output uniform."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

# Pipes and CI logs get a wide console so tables are not folded at rich's 80-column default.
stdout = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    return value


def print_json(value: Any) -> None:
    """Plain JSON on stdout (no rich markup, no wrapping), one document per call."""
    print(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False))


def print_table(title: str | None, columns: list[str], rows: list[list[str]]) -> None:
    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # cells are data, never markup
    stdout.print(table)


def fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def error(message: str) -> None:
    stderr.print(f"[bold red]error:[/] {escape(message)}", markup=True)


def warn(message: str) -> None:
    stderr.print(f"[yellow]warning:[/] {escape(message)}", markup=True)


def info(message: str) -> None:
    stdout.print(message, markup=False)
