"""Output helpers shared by CLI commands: JSON for scripts and agents, rich tables for
people, errors on stderr. Keeping this in one place keeps `--json` output uniform.

rich (and pydantic) are imported on first need, not with this module, so a command that
prints JSON or a plain message does not pay for them. When the stream is not a terminal
(an agent's pipe, a CI log) a plain ASCII message, and a small ASCII table without a
title, are written directly: exactly the bytes rich writes for them there
(tests/cli/test_cli_startup.py renders both ways and compares). Anything else (a terminal,
FORCE_COLOR or TTY_COMPATIBLE set, other characters, a table wider than the console) goes
through the rich consoles `stdout` and `stderr`, made on first use.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # (typing itself is 2 ms of start-up: annotations only)
if TYPE_CHECKING:
    from typing import Any

# Pipes and CI logs get a wide console so tables are not folded at rich's 80-column default.
_STDOUT_WIDTH = None if sys.stdout.isatty() else 160
_consoles: dict[str, Any] = {}

# What rich writes unchanged to a stream that is not a terminal: printable ASCII, with nothing
# it would read as an emoji code (`:name:`), markup (`[tag]`) or an escape (`\`).
_PRINTABLE = re.compile(r"[ -~]*")
_EMOJI = re.compile(r":\S*:")
_MARKUP = re.compile(r"[\[\\]")


def __getattr__(name: str) -> Any:
    """`output.stdout` and `output.stderr`: the rich consoles, made on first use (PEP 562)."""
    if name in ("stdout", "stderr"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _console(name: str) -> Any:
    console = _consoles.get(name)
    if console is None:
        from rich.console import Console

        if name == "stdout":
            console = Console(highlight=False, soft_wrap=True, width=_STDOUT_WIDTH)
        else:
            console = Console(stderr=True, highlight=False, soft_wrap=True)
        _consoles[name] = console
    return console


def _plain_stream(stream: Any) -> bool:
    """True when rich would certainly not treat `stream` as a terminal (no styles, no width)."""
    if stream is None or "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    stream = getattr(stream, "rich_proxied_file", stream)
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def _plain_text(text: str, markup: bool = True) -> bool:
    if not _PRINTABLE.fullmatch(text):
        return False
    return _EMOJI.search(text) is None and not (markup and _MARKUP.search(text))


def _write(stream: Any, text: str) -> None:
    """One line, flushed at once as rich does."""
    stream.write(text + "\n")
    stream.flush()


def to_jsonable(value: Any) -> Any:
    # A pydantic model exists only once pydantic is imported: no import needed to ask.
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    return value


def print_json(value: Any) -> None:
    """Plain JSON on stdout (no rich markup, no wrapping), one document per call: strict JSON
    (`engine.json_text`: a NaN or Infinity, which a record another tool wrote may hold, is
    printed null)."""
    from kernelscope.daemon.engine import json_text

    print(json_text(to_jsonable(value), nulls=True, indent=2, ensure_ascii=False))


def print_table(title: str | None, columns: list[str], rows: list[list[str]]) -> None:
    if title is None and _print_plain_table(columns, rows):
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # cells are data, never markup
    _console("stdout").print(table)


def _print_plain_table(columns: list[str], rows: list[list[str]]) -> bool:
    """rich's default table (HEAVY_HEAD box, padding 1) when it fits the 160-column pipe
    console unfolded; False (nothing written) when rich has to render it."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    if _STDOUT_WIDTH != 160 or not encoding.startswith("utf") or not _plain_stream(stream):
        return False
    if not all(_plain_text(column) for column in columns):
        return False
    if any(len(row) != len(columns) or not all(_PRINTABLE.fullmatch(cell) for cell in row) for row in rows):
        return False
    widths = [max([len(name), *(len(row[index]) for row in rows)]) + 2 for index, name in enumerate(columns)]
    if sum(widths) + len(widths) + 1 > _STDOUT_WIDTH:
        return False

    def line(cells: list[str], edge: str, divider: str) -> str:
        padded = (f" {cell.ljust(width - 2)} " for cell, width in zip(cells, widths, strict=True))
        return edge + divider.join(padded) + edge

    lines = [
        "┏" + "┳".join("━" * width for width in widths) + "┓",
        line(columns, "┃", "┃"),
        "┡" + "╇".join("━" * width for width in widths) + "┩",
        *(line(row, "│", "│") for row in rows),
        "└" + "┴".join("─" * width for width in widths) + "┘",
    ]
    _write(stream, "\n".join(lines))
    return True


def fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def failed(exc: BaseException, json_out: bool) -> int:
    """A command that did not run or was refused, reported: under `--json` one JSON document on
    stdout (an agent parses stdout: never a plain-text refusal there), else `error: ...` on
    stderr. Returns its exit status."""
    message, exit_code, kind = failure(exc)
    if json_out:
        print_json({"error": {"kind": kind, "message": message, "exit_code": exit_code}})
    else:
        error(message)
    return exit_code


def failure(exc: BaseException) -> tuple[str, int, str]:
    """The one place an exception becomes what a command reports: its message, exit status and
    `error.kind` (a word of engine.ERROR_KINDS): the engine's errors carry theirs, click's usage
    errors (typer's parser) are `usage`, an interrupt is `interrupted`."""
    from kernelscope.daemon.engine import Cancelled, KernelscopeError, UsageError

    names = {cls.__name__ for cls in type(exc).__mro__}  # click's classes, without importing click
    if isinstance(exc, KernelscopeError):
        return str(exc), exc.exit_code, exc.kind
    if "ClickException" in names:
        return exc.format_message(), UsageError.exit_code, UsageError.kind  # type: ignore[attr-defined]
    if isinstance(exc, KeyboardInterrupt) or "Abort" in names:
        return "interrupted", Cancelled.exit_code, Cancelled.kind
    raise TypeError(f"not a reported failure: {type(exc).__name__}") from exc


def error(message: str) -> None:
    if _plain_stream(sys.stderr) and _plain_text(message):
        _write(sys.stderr, f"error: {message}")
        return
    from rich.markup import escape

    _console("stderr").print(f"[bold red]error:[/] {escape(message)}", markup=True)


def warn(message: str) -> None:
    if _plain_stream(sys.stderr) and _plain_text(message):
        _write(sys.stderr, f"warning: {message}")
        return
    from rich.markup import escape

    _console("stderr").print(f"[yellow]warning:[/] {escape(message)}", markup=True)


def info(message: str) -> None:
    if _plain_stream(sys.stdout) and _plain_text(message, markup=False):
        _write(sys.stdout, message)
        return
    _console("stdout").print(message, markup=False)


def report(json_out: bool, data: Any, message: str) -> None:
    """A command's result: `data` as JSON for scripts and agents, else `message` for people."""
    if json_out:
        print_json(data)
    else:
        info(message)
