"""The console script's fast paths: `memory list|read|latest|update` and `serve` without typer.

The seed's agents call `memory read/list/update/latest` many times per iteration, and every
editor starts `kernelscope serve`; through typer they would pay for typer, rich, pydantic
and every command module first (about ten times the seed's own argparse script). Here:

- `memory list|read|latest|update` parse the flags they are called with (`--workspace/-w`,
  `--json`, `--version/-v`, `--field/-f`, `--unmasked-only`, `--include-masked`,
  `--set/-s`, as `--opt VALUE` or `--opt=VALUE`) and read or write the records with the
  engine's semantics (kernelscope.daemon.engine.memory.records.MemoryManager): the same scan,
  numeric order, error texts, masked rules, dotted paths, `--set` typing, and for `update`
  the same lock, orphan clean-up, journal replay and atomic write (engine.atomic_io itself).
  Output goes through `output`, so it is the same bytes, exit statuses are the same.
- `serve [--tcp] [--port N]` starts the LSP server directly.

Whatever this module cannot vouch for it hands back before printing anything or changing a
record (an `update` may have created the lock file and removed orphaned temp files, as the
engine does first too), and the full typer CLI runs instead: help, any other flag or form (a
positional, a repeated option, a value that looks like a flag), a record only pydantic can
judge (its validation message words the error), a journal left by a cut-short mask-half, an
unexpected exception.
tests/test_cli_startup.py runs both on the same inputs and compares them byte for byte.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import re
import sys
from pathlib import Path

from kernelscope.daemon.cli import output
from kernelscope.daemon.engine import DataError, KernelscopeError, UsageError
from kernelscope.daemon.engine.memory.record_edits import (
    get_path,
    parse_assignment,
    parse_cli_value,  # noqa: F401 - one of the rules the fast path shares (tests compare them)
    set_path,
)

TYPE_CHECKING = False  # (typing itself is 2 ms of start-up: annotations only)
if TYPE_CHECKING:
    from typing import Any

MEMORY_DIR = "memory"
BASELINE = "v0"
JOURNAL_NAME = ".kernelscope-journal.json"  # engine.atomic_io.JOURNAL_NAME (a test keeps them equal)
_FILE_RE = re.compile(r"^v(\d+)\.json$")  # engine.memory._FILE_RE
_SCALAR_TYPES = (type(None), bool, int, float, str)  # protocol.memory.Scalar
NOT_PROMOTED = {"pivot", "blocked", "rejected", "interrupted", "invalid_handoff", "failed"}  # formats.atrex
MEASURED_SUBJECTS = {"candidate", "episode_head", None}  # formats.atrex


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


_VERSION_RE = re.compile(r"^v(\d+)$")  # protocol.memory._VERSION_RE
_AS_FLOAT = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


# -- the engine's rules, on the raw records ---------------------------------------------
# --set values and dotted paths come from the engine's own pydantic-free module
# (engine.record_edits). Version names and loose numbers are copies of protocol.memory's (this
# path imports nothing of kernelscope.protocol); the rest mirrors what engine.memory and
# engine.memory.atrex_fields do through pydantic models. tests/test_cli_startup.py checks them.


def parse_version(version: str) -> int:
    match = _VERSION_RE.match(version.strip()) if isinstance(version, str) else None
    if not match:
        raise ValueError(f"invalid version {version!r}: expected 'v<N>' such as v0, v7, v12")
    return int(match.group(1))


def format_version(number: int) -> str:
    if number < 0:
        raise ValueError(f"version number must be >= 0, got {number}")
    return f"v{number}"


def normalize_version(version: str) -> str:
    text = str(version).strip()
    if text.isdigit():
        text = "v" + text
    text = text[:1].lower() + text[1:]
    try:
        return format_version(parse_version(text))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _AS_FLOAT.match(value)
        if not match:
            return None
        number = float(match.group(1))
    else:
        return None
    return number if math.isfinite(number) else None


def _get(section: Any, key: str) -> Any:
    """A key of a record's section, as the engine reads it from its models: a dict's entry;
    nothing from a string, number or list (they have no such attribute)."""
    return section.get(key) if isinstance(section, dict) else None


def _valid(data: dict[str, Any]) -> None:
    """Fallback unless MemoryRecord.model_validate(data) certainly succeeds: everything in a
    record is optional and open except `version` (a string 'v<N>') and the two top-level
    scalars; pydantic words any other verdict, so the full CLI says it."""
    version = data.get("version")
    if type(version) is not str or not _VERSION_RE.match(version.strip()):
        raise Fallback
    if any(type(data.get(key)) not in _SCALAR_TYPES for key in ("timestamp", "git_commit_hash")):
        raise Fallback


class _Entry:
    """One memory file (engine.memory.MemoryEntry): its raw object, or why it is unreadable."""

    __slots__ = ("error", "number", "path", "raw", "text")

    def __init__(
        self, number: int, path: Path, raw: dict[str, Any] | None, error: str | None, text: str = ""
    ) -> None:
        self.number, self.path, self.raw, self.error, self.text = number, path, raw, error, text

    @property
    def version(self) -> str:
        return format_version(self.number)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def masked(self) -> bool:
        if self.raw is None or self.error is not None:
            return False
        masked = self.raw.get("masked")
        if isinstance(masked, str):
            return masked.strip().lower() == "true"
        return masked is True


def _load(number: int, path: Path) -> _Entry:
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _Entry(number, path, None, f"{path.name}: not valid JSON ({exc})")
    if not isinstance(raw, dict):
        return _Entry(number, path, None, f"{path.name}: expected a JSON object, got {type(raw).__name__}")
    data = raw if "version" in raw else {"version": format_version(number), **raw}
    _valid(data)
    if parse_version(data["version"]) != number:
        return _Entry(
            number,
            path,
            raw,
            f"{path.name}: file says version {data['version']!r}, its name says {format_version(number)}",
        )
    return _Entry(number, path, raw, None, text)


def _scan(memory_dir: Path) -> list[_Entry]:
    if not memory_dir.is_dir():
        return []
    if (memory_dir / JOURNAL_NAME).exists():
        raise Fallback  # a mask-half cut short: the engine finishes it under the lock first
    entries = []
    for path in memory_dir.iterdir():
        match = _FILE_RE.match(path.name)
        if match and path.is_file():
            entries.append(_load(int(match.group(1)), path))
    entries.sort(key=lambda entry: entry.number)
    return entries


def _entry(memory_dir: Path, version: str) -> _Entry:
    normalized = normalize_version(version)
    path = memory_dir / f"{normalized}.json"
    if not path.is_file():
        raise DataError(f"{normalized} not found: no file {path}")
    entry = _load(parse_version(normalized), path)
    if entry.error:
        raise DataError(f"{entry.error}")
    return entry


def _field(entry: _Entry, field: str | None) -> Any:
    if field is None:
        return entry.raw
    try:
        return get_path(entry.raw, list(field.split(".")))
    except KeyError as exc:
        raise DataError(f"{entry.version}: {exc.args[0]}") from None


def _gate(raw: dict[str, Any]) -> str | None:
    for section, key in (("quality_gate", "result"), ("correctness", "status")):
        value = _get(raw.get(section), key)
        if isinstance(value, str) and value.strip():
            return value.strip().upper()
    return None


def _metric(raw: dict[str, Any], name: str) -> float | None:
    return as_float(_get(raw.get("performance"), name))


def _summary(entry: _Entry, base_latency: float | None) -> dict[str, Any]:
    """One VersionSummary, as model_dump(mode="json") writes it (MemoryManager.summaries)."""
    row: dict[str, Any] = dict.fromkeys(_SUMMARY_FIELDS)
    row.update(version=entry.version, masked=False, path=str(entry.path))
    raw = entry.raw
    if entry.error is not None or raw is None:
        row["error"] = entry.error
        return row
    performance = raw.get("performance")
    status = _get(raw.get("long_horizon"), "status")
    carried = _get(performance, "carried_from_version")
    subject = _get(performance, "measurement_subject")
    carried_from = str(carried) if isinstance(carried, str) and carried else None
    measured = carried_from is None and subject in MEASURED_SUBJECTS
    if subject == "unavailable":
        measured = False
    latency = _metric(raw, "latency_us") if measured else None
    speedup = base_latency / latency if base_latency and latency else None
    optimization = raw.get("optimization")
    if optimization is not None and not isinstance(optimization, dict):
        raise Fallback  # the engine reads .action_category off it (and fails): let it
    value = None if optimization is None else optimization.get("action_category")
    experiments = _get(_get(raw, "experience"), "experiments")
    notes = sum(isinstance(item, dict) for item in experiments) if isinstance(experiments, list) else 0
    directions = raw.get("open_directions")
    listed = directions if isinstance(directions, list) else []
    found = sum(isinstance(item, dict) or bool(item) for item in listed)  # a dict is shown as JSON
    row.update(
        masked=entry.masked,
        gate=_gate(raw),
        latency_us=latency,
        tflops=_metric(raw, "tflops"),
        bandwidth_gbps=_metric(raw, "bandwidth_gbps"),
        speedup_vs_v0=speedup,
        action=None if value is None else str(value),
        outcome=str(status) if isinstance(status, str) and status in NOT_PROMOTED else None,
        carried_from=carried_from,
        speedup_vs_reference=as_float(_get(performance, "speedup_vs_ref_geomean")) if measured else None,
        experiments=notes or None,
        open_directions=found or None,
    )
    return row


_SUMMARY_FIELDS = (  # protocol.workspace.VersionSummary, in order
    "version",
    "masked",
    "gate",
    "latency_us",
    "tflops",
    "bandwidth_gbps",
    "speedup_vs_v0",
    "action",
    "path",
    "error",
    "outcome",
    "carried_from",
    "speedup_vs_reference",
    "experiments",
    "open_directions",
)


_FLOAT_FIELDS = ("latency_us", "tflops", "bandwidth_gbps", "speedup_vs_v0", "speedup_vs_reference")


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


# -- the commands ------------------------------------------------------------------------


class _Run:
    """One invocation: `committed` once anything was printed or written (no fallback after)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.root = Path(options.get("workspace", ".")).resolve()
        self.memory_dir = self.root / MEMORY_DIR
        self.committed = False

    def list(self) -> None:
        entries = _scan(self.memory_dir)
        baseline = next((e for e in entries if e.number == 0 and e.ok), None)
        base_latency = _metric(baseline.raw, "latency_us") if baseline and baseline.raw is not None else None
        rows = [_summary(entry, base_latency) for entry in entries]
        if self.options.get("json"):
            for row in rows:
                for key in _FLOAT_FIELDS:
                    if row[key] is not None and not math.isfinite(row[key]):
                        raise Fallback  # inf/nan: pydantic's JSON mode decides how it looks
            self.committed = True
            output.print_json(rows)
            return
        if not rows:
            raise DataError(f"no memory files in {self.memory_dir}")
        cells = [
            [
                row["version"],
                "yes" if row["masked"] else "",
                row["gate"] or "-",
                _fmt(row["latency_us"], ".3f"),
                _fmt(row["speedup_vs_v0"], ".3f", "x"),
            ]
            if row["error"] is None
            else [row["version"], "?", "CORRUPT", "-", row["error"]]
            for row in rows
        ]
        self.committed = True
        output.print_table(None, ["version", "masked", "gate", "latency (us)", "latency ratio vs v0"], cells)

    def read(self) -> None:
        options = self.options
        field = options.get("field")
        include_masked = bool(options.get("include_masked"))
        if options.get("unmasked_only") and include_masked:
            raise UsageError("--unmasked-only and --include-masked contradict each other")
        if options.get("version") is not None:
            entry = _entry(self.memory_dir, options["version"])
            if entry.masked and not include_masked:
                raise DataError(
                    f"{entry.version} is masked: its experience is hidden from the active memory "
                    "(pass --include-masked to read it anyway, or unmask it)"
                )
            value = _field(entry, field)
            self.committed = True
            output.print_json(value)
            return
        results: list[Any] = []
        errors: list[str] = []
        for entry in _scan(self.memory_dir):
            if entry.error:
                errors.append(entry.error)
                continue
            if entry.masked and not include_masked:
                continue
            if field is None:
                results.append(entry.raw)
            else:
                try:
                    value = _field(entry, field)
                except DataError:
                    value = None
                results.append({"version": entry.version, field: value})
        self.committed = True
        for message in errors:
            output.warn(f"skipped unreadable memory file {message}")
        if not results and not errors:
            raise DataError(f"no memory files in {self.memory_dir}")
        output.print_json(results)

    def latest(self) -> None:
        version = next((e.version for e in reversed(_scan(self.memory_dir)) if e.ok and not e.masked), None)
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
        from kernelscope.daemon.engine.memory import atomic_io  # filelock: only writers pay for it

        git_dir = self.root / ".git"
        lock_dir = git_dir / "kernelscope" if git_dir.is_dir() else self.memory_dir
        with atomic_io.workspace_lock(lock_dir):
            for orphan in self.memory_dir.glob(atomic_io.TEMP_PREFIX + "*"):
                with contextlib.suppress(OSError):
                    orphan.unlink()
            atomic_io.replay_journal(self.memory_dir, _FILE_RE)
            entry = _entry(self.memory_dir, version)
            data = entry.raw
            assert data is not None
            for path, value in parsed:
                set_path(data, path, value)
            _valid(data)
            try:
                text = atomic_io.dump_json(data, atomic_io.detect_indent(entry.text))
            except ValueError as exc:
                raise DataError(f"update would make {entry.path.name} invalid: {exc}") from None
            self.committed = True
            atomic_io.atomic_write_text(entry.path, text)
        if self.options.get("json"):
            output.print_json(data)
        else:
            output.info(f"Updated: {self.memory_dir / (normalize_version(version) + '.json')}")


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
        output.error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130  # as typer: Exit(130), nothing printed
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
