"""What `memory update --set` and `memory read --field` do to a raw record: typed values and
dotted paths. Nothing here imports pydantic or kernelscope.protocol, so the CLI's fast path
(daemon/cli/fast.py) runs the engine's own rules (daemon/engine/memory/records.py re-exports them)."""

from __future__ import annotations

import json

from kernelscope.daemon.engine import (
    MAX_JSON_DEPTH,
    DataError,
    UnreadableJSON,
    UsageError,
    json_depth,
    load_json,
)

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_INFINITY = float("inf")


def parse_cli_value(raw: str) -> Any:
    """A `--set` value, JSON-typed, compatible with the seed's memory manager.

    `null`/`none` -> None, `true`/`false` (any case) -> bool, JSON numbers, arrays and
    objects as JSON, a quoted JSON string to force a string (`'"42"'`); anything else is kept
    as the plain string. NaN and Infinity are refused: they are not JSON; so is a number
    beyond a float's range (`1e999`), which Python reads as Infinity.
    """
    lowered = raw.strip().lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"

    def _refuse_constant(name: str) -> Any:
        raise UsageError(f"{name} is not a JSON value; quote it to store the string")

    def _finite(number: str) -> float:
        value = float(number)
        if value in (_INFINITY, -_INFINITY):
            shown = number if len(number) <= 40 else number[:37] + "..."
            raise UsageError(
                f"invalid --set value: the number {shown} is beyond a float's range (JSON has no "
                "Infinity); quote it to store the string"
            )
        return value

    try:
        return load_json(raw, parse_constant=_refuse_constant, parse_float=_finite)
    except UnreadableJSON as exc:  # (too deep, too long a number: no record could hold it)
        raise UsageError(f"invalid --set value: {exc.msg}") from None
    except json.JSONDecodeError:
        if lowered in ("nan", "inf", "-inf", "infinity", "-infinity"):
            raise UsageError(f"{raw!r} is not a finite number") from None
        return raw


def parse_assignment(assignment: str) -> tuple[list[str], Any]:
    """`a.b.c=VALUE` -> (["a", "b", "c"], typed value)."""
    if "=" not in assignment:
        raise UsageError(f"invalid --set {assignment!r}: expected KEY=VALUE, e.g. performance.tflops=150.2")
    key, raw_value = assignment.split("=", 1)
    path = [part.strip() for part in key.strip().split(".")]
    if not path or any(not part for part in path):
        raise UsageError(f"invalid --set key {key!r}: expected dotted names like a.b.c")
    value = parse_cli_value(raw_value)
    if len(path) + json_depth(value) > MAX_JSON_DEPTH:  # what every reader reads back (load_json)
        shown = key if len(key) <= 60 else key[:57] + "..."
        raise UsageError(
            f"invalid --set {shown!r}: the record would nest {len(path) + json_depth(value)} levels "
            f"deep, more than the {MAX_JSON_DEPTH} kernelscope reads; nothing was written"
        )
    return path, value


def get_path(data: Any, path: list[str]) -> Any:
    """The value at a dotted path (list elements by index). KeyError names the failing part."""
    current = data
    for part in path:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise KeyError(f"field '{'.'.join(path)}' not found (failed at '{part}')")
    return current


def set_path(data: dict[str, Any], path: list[str], value: Any) -> None:
    """Set a dotted path, creating missing objects but never overwriting a non-object."""
    current: Any = data
    for depth, part in enumerate(path[:-1]):
        if isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
            continue
        if not isinstance(current, dict):
            raise DataError(f"cannot set '{'.'.join(path)}': '{'.'.join(path[:depth])}' is not an object")
        if part not in current or current[part] is None:
            current[part] = {}
        elif not isinstance(current[part], (dict, list)):
            where = ".".join(path[: depth + 1])
            raise DataError(
                f"cannot set '{'.'.join(path)}': '{where}' holds {type(current[part]).__name__} "
                f"{current[part]!r}, not an object (set '{where}' itself to replace it)"
            )
        current = current[part]
    last = path[-1]
    if isinstance(current, list) and last.isdigit() and int(last) < len(current):
        current[int(last)] = value
    elif isinstance(current, dict):
        current[last] = value
    else:
        raise DataError(f"cannot set '{'.'.join(path)}': its parent is not an object")
