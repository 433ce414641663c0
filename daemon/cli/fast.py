"""The console script's fast paths: `memory list|read|latest|update` and `serve` without typer.

The seed's agents call `memory read/list/update/latest` many times per iteration, and every
editor starts `kernelscope serve`; through typer they would pay for typer, rich, pydantic
and every command module first (about ten times the seed's own argparse script). Here:

- `memory list|read|latest|update` parse the flags they are called with (`--workspace/-w`,
  `--json`, `--version/-v`, `--field/-f`, `--unmasked-only`, `--include-masked`,
  `--set/-s`, as `--opt VALUE` or `--opt=VALUE`) and read or write the records through the
  engine's own pydantic-free core (engine/memory/core.py: which files are records, reading
  one, a dotted field, the summary row; protocol/record_rules.py: versions, masked, gate), the
  same code the memory manager builds on; for `update` the same lock, orphan clean-up, journal
  replay and atomic write (engine/memory/atomic_io.py itself). Output goes through `output`,
  so it is the same bytes, exit statuses are the same.
- `serve [--tcp] [--port N]` starts the LSP server directly.

Whatever this module cannot vouch for it hands back before printing anything or changing a
record (an `update` may have created the lock file and removed orphaned temp files, as the
engine does first too), and the full typer CLI runs instead: help, any other flag or form (a
positional, a repeated option, a value that looks like a flag), a record only pydantic can
judge (its validation message words the error), a journal left by a cut-short mask-half (the
engine shows the records as finishing it leaves them, and writes nothing), an unexpected
exception.
tests/cli/test_cli_startup.py runs both paths on the same inputs and compares their output.
"""

from __future__ import annotations

import errno
import math
import sys
from pathlib import Path

from kernelscope.daemon.cli import output
from kernelscope.daemon.engine import DataError, KernelscopeError, UsageError
from kernelscope.daemon.engine.memory import atrex_fields, core
from kernelscope.daemon.engine.memory.record_edits import parse_assignment, set_path
from kernelscope.protocol import workspace_files
from kernelscope.protocol.record_rules import certainly_valid, format_score

TYPE_CHECKING = False  # (typing itself is 2 ms of start-up: annotations only)
if TYPE_CHECKING:
    from typing import Any


class Fallback(Exception):
    """The full CLI must run this invocation (nothing printed, no record changed)."""


# -- arguments --------------------------------------------------------------------------

_COMMON = {"--workspace": "workspace", "-w": "workspace", "--json": "json"}
_OPTIONS = {
    "list": _COMMON,
    "latest": _COMMON,
    "read": {
        **_COMMON,
        "--version": "version",
        "-v": "version",
        "--field": "field",
        "-f": "field",
        "--unmasked-only": "unmasked_only",
        "--include-masked": "include_masked",
    },
    "update": {**_COMMON, "--version": "version", "-v": "version", "--set": "set", "-s": "set"},
}
_FLAGS = {"json", "unmasked_only", "include_masked"}
_REQUIRED = {"update": ("version", "set")}


def _parse(command: str, args: list[str]) -> dict[str, Any]:
    """The options, as typer would give them to the command, for the forms listed above."""
    spec = _OPTIONS[command]
    values: dict[str, Any] = {}
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, equals, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        dest = spec.get(name)
        if dest is None:
            raise Fallback  # help, a positional, `--`, an unknown or bundled option: click says it
        if dest in _FLAGS:
            if equals:
                raise Fallback
            value: Any = True
        elif equals:
            value = attached
        elif index < len(args) and not args[index].startswith("-"):
            value = args[index]
            index += 1
        else:
            raise Fallback  # no value, or one click would take that looks like a flag
        if dest == "set":
            values.setdefault("set", []).append(value)
        elif dest in values:
            raise Fallback  # repeated: click keeps the last one, let it
        else:
            values[dest] = value
    if any(dest not in values for dest in _REQUIRED.get(command, ())):
        raise Fallback
    if values.get("workspace", ".") == "":
        raise Fallback
    return values


def _plain_args(args: list[str]) -> bool:
    for arg in args:
        if "\x00" in arg:
            return False
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes from argv (surrogate escapes)
            return False
    return True


def _files(memory_dir: Path) -> list[core.RawFile]:
    """Every record file, read raw; the full CLI runs whatever only the record model can judge."""
    if (memory_dir / core.JOURNAL_NAME).exists():
        raise Fallback  # a mask-half cut short: the engine shows it finished (records.scan)
    files = [core.read_file(number, path) for number, path in core.record_files(memory_dir)]
    if not all(f.vouched for f in files):
        raise Fallback
    return files


def _file(memory_dir: Path, version: str) -> core.RawFile:
    if (memory_dir / core.JOURNAL_NAME).exists():  # (`update` replayed it, under the lock)
        raise Fallback  # a mask-half cut short: the engine shows the version as it leaves it
    found = core.read_file(*core.file_of(memory_dir, version))
    if not found.vouched:
        raise Fallback
    if found.error:
        raise DataError(found.error)
    return found


def _numbers(row: dict[str, Any]) -> list[Any]:
    score = row.get("score") or {}
    return [*row.values(), score.get("value"), *(score.get("ci") or ())]


def _score(score: dict[str, Any] | None) -> str:
    """The table cell of the one score (memory/scores.score_cell for the models)."""
    return "-" if score is None else format_score(score["value"], score["kind"], score["ci"])


# -- the commands ------------------------------------------------------------------------


class _Run:
    """One invocation: `committed` once anything was printed or written (no fallback after)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.committed = False

    @property
    def root(self) -> Path:
        """The workspace, once a command needs it (after its flags were checked, as the CLI)."""
        from kernelscope.daemon.engine.workspace.discovery import require_workspace

        return require_workspace(Path(self.options.get("workspace", ".")), need="memory")

    @property
    def memory_dir(self) -> Path:
        return self.root / core.MEMORY_DIR

    def readme_kind(self) -> str | None:
        """The README's primary metric, which decides a score vs v0 (memory/core.py), read by
        readme.py's own lines; README_UNREAD where only its model can say (a ```kernelscope
        block, an unreadable file)."""
        from kernelscope.daemon.engine.workspace import readme_conditions
        from kernelscope.protocol.vocabulary import WORKSPACE_README

        path = self.root / WORKSPACE_README
        if not path.is_file():
            return None
        try:
            kind = readme_conditions.primary_kind(workspace_files.read_text(path, errors="replace"))
        except OSError:
            return core.README_UNREAD
        return core.README_UNREAD if kind == readme_conditions.BLOCK_DECIDES else kind

    def list(self) -> None:
        files = _files(self.memory_dir)
        base = next((f.raw for f in files if f.number == 0 and f.error is None), None)
        v0 = atrex_fields.BaseWorkloads(base) if base is not None else None  # (once, not per row)
        # The README is read only when a record needs its metric (no latency on one side): the
        # score asks for it (KindNeeded), and rows scored before did not need it.
        kind: str | None = core.README_UNREAD
        rows: list[dict[str, Any]] = []
        for found in files:
            try:
                summary = core.summary_row(found.number, found.path, found.raw, found.error, base, kind, v0)
            except core.KindNeeded:
                kind = self.readme_kind()
                if kind == core.README_UNREAD:
                    raise Fallback from None  # only the README's model can say: the full CLI reads it
                summary = core.summary_row(found.number, found.path, found.raw, found.error, base, kind, v0)
            rows.append(core.listed(summary))
        if self.options.get("json"):
            for row in rows:
                if any(isinstance(value, float) and not math.isfinite(value) for value in _numbers(row)):
                    raise Fallback  # inf/nan: pydantic's JSON mode decides how it looks
            self.committed = True
            output.print_json(rows)
            return
        if not rows:
            self.committed = True
            output.info(core.no_versions(self.memory_dir))
            return
        cells: list[list[str]] = [
            [
                row["version"],
                "yes" if row["masked"] else "",
                row["gate"] or "-",
                _score(row["score"]),
                core.latency_cell(row["latency_us"], row["coverage"]),
            ]
            if row["error"] is None
            else [row["version"], "?", "CORRUPT", "-", row["error"]]
            for row in rows
        ]
        self.committed = True
        output.print_table(None, list(core.LIST_COLUMNS), cells)

    def read(self) -> None:
        options = self.options
        field = options.get("field")
        include_masked = bool(options.get("include_masked"))
        if options.get("unmasked_only") and include_masked:
            raise UsageError("--unmasked-only and --include-masked contradict each other")
        if options.get("version") is not None:
            entry = _file(self.memory_dir, options["version"])
            if entry.masked and not include_masked:
                raise DataError(
                    f"{entry.version} is masked: its experience is hidden from the active memory "
                    "(pass --include-masked to read it anyway, or unmask it)"
                )
            assert entry.raw is not None
            value = core.field_of(entry.raw, entry.version, field)
            self.committed = True
            output.print_json(value)
            return
        results: list[Any] = []
        errors: list[str] = []
        masked = 0
        for entry in _files(self.memory_dir):
            if entry.error or entry.raw is None:
                errors.append(entry.error or "")
                continue
            if entry.masked and not include_masked:
                masked += 1
                continue
            if field is None:
                results.append(entry.raw)
            else:
                try:
                    value = core.field_of(entry.raw, entry.version, field)
                except DataError:
                    value = None
                results.append({"version": entry.version, field: value})
        self.committed = True
        for message in errors:
            output.warn(f"skipped unreadable memory file {message}")
        if not results and not errors:
            raise DataError(core.nothing_to_read(self.memory_dir, masked))
        output.print_json(results)

    def latest(self) -> None:
        files = _files(self.memory_dir)
        version = next((f.version for f in reversed(files) if f.error is None and not f.masked), None)
        if version is None:
            raise DataError("no unmasked iterations found")
        self.committed = True
        if self.options.get("json"):
            output.print_json({"latest": version})
        else:
            print(version)

    def update(self) -> None:
        version = self.options["version"]
        parsed = [parse_assignment(item) for item in self.options["set"]]
        for path, value in parsed:
            if path == ["version"]:
                raise UsageError("the version field follows the file name and cannot be --set")
            if path == ["masked"] and not isinstance(value, bool):
                raise UsageError("masked must be true or false")
            if path == ["masked"] and value and core.is_baseline(version):
                raise DataError(core.MASK_BASELINE_REFUSAL)
        if any((self.root / hint).exists() for hint in core.SUPERVISOR_HINTS):
            raise Fallback  # maybe a supervisor's workspace: the full CLI judges and refuses
        from kernelscope.daemon.engine.memory import atomic_io  # filelock: only writers pay for it

        with atomic_io.memory_write_lock(self.root):
            entry = _file(self.memory_dir, version)
            data = entry.raw
            assert data is not None
            for path, value in parsed:
                set_path(data, path, value)
            if not certainly_valid(core.with_version(data, entry.number)):
                raise Fallback
            try:
                text = atomic_io.dump_json(data, atomic_io.detect_indent(entry.text))
            except ValueError as exc:
                raise DataError(f"update would make {entry.path.name} invalid: {exc}") from None
            self.committed = True
            atomic_io.atomic_write_text(entry.path, text)
        if self.options.get("json"):
            output.print_json(data)
        else:
            output.info(f"Updated: {entry.path}")


class _PacifyFlush:
    """What click leaves on sys.stdout/stderr after a broken pipe: flushing stays quiet."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def _broken_pipe() -> int:
    sys.stdout = _PacifyFlush(sys.stdout)
    sys.stderr = _PacifyFlush(sys.stderr)
    return 1


def memory(command: str, args: list[str]) -> int | None:
    """`kernelscope memory COMMAND ARGS` here; None when the full CLI must run it."""
    if command not in _OPTIONS or not _plain_args(args):
        return None
    run: _Run | None = None
    try:
        run = _Run(_parse(command, args))
        getattr(run, command)()
    except Fallback:
        return None
    except KernelscopeError as exc:
        return output.failed(exc, json_out="--json" in args)
    except KeyboardInterrupt as exc:  # as the full CLI: the interrupted document under --json
        return output.failed(exc, json_out=True) if "--json" in args else output.failure(exc)[1]
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return _broken_pipe()
        if run is None or not run.committed:
            return None
        raise
    except Exception:
        if run is None or not run.committed:
            return None  # e.g. a record the engine itself stumbles on: the full CLI shows how
        raise
    return 0


def serve(args: list[str]) -> int | None:
    """`kernelscope serve [--tcp] [--port N]`: the LSP server, without typer or the other commands."""
    tcp, port, seen = False, 2087, set()
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in seen:
            return None
        seen.add(name)
        if name == "--tcp" and not equals:
            tcp = True
        elif name == "--port":
            if not equals:
                if index >= len(args):
                    return None
                value = args[index]
                index += 1
            if not (value.isascii() and value.isdigit() and 1 <= int(value) <= 65535):
                return None  # click words the range error
            port = int(value)
        else:
            return None
    from kernelscope.daemon.lsp.server import serve as serve_lsp

    try:
        serve_lsp(tcp=tcp, port=port)
    except KernelscopeError as exc:
        output.error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return _broken_pipe()
        raise
    return 0
