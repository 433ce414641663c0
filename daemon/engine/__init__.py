"""The engine: everything the CLI and the LSP server both call. No LSP, no CLI here.

Its parts, one folder each: workspace/ (what a folder is and states, and the one cache a
long-running process keeps of it), memory/ (the records, their writes and the one score),
store/ (the experiment store), history/ (blame, tried values, fingerprints, compare), run/
(starting and supervising user code), workflows/ (probe, iterate, restart, git, demo) and
views/ (every text a person reads).

Errors the engine raises live here, each carrying the CLI exit status it maps to and the `kind`
its JSON error document names (ERROR_KINDS, the one vocabulary; docs/reference/cli.md lists
it). Exit statuses are part of the contract agents rely on: 0 success, 1 usage error (bad
arguments), 2 missing or invalid data (no such version, corrupt file, refused operation), 130
cancelled.
With them, the two word rules every part's messages use (`write_error_reason`, `counted`):
here rather than in views/, which reads the other parts and so cannot be read by them; the
end of the session a write was asked in (`for_session`), which every part's writes check; and
what JSON kernelscope reads from a workspace and writes anywhere (`load_json`, `json_text`),
which every part's readers and writers use.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import sys
import time

TYPE_CHECKING = False  # the CLI's fast path imports this module: typing and threading stay out
if TYPE_CHECKING:
    import threading
    from collections.abc import Iterator
    from typing import Any

# Every `error.kind` a command's JSON error document can name, and what it means. A subclass
# keeps its parent's kind unless it names one of these.
ERROR_KINDS = {
    "usage": "the request itself is wrong: an unknown flag, a bad value (exit 1)",
    "data": "missing or invalid data, or an operation refused on it (exit 2)",
    "store": "the experiment store cannot be used (exit 2)",
    "supervised": "a write refused because an orchestrator drives the workspace (exit 2)",
    "write_failed": "a write could not be completed; the file it replaced is as it was (exit 2)",
    "interrupted": "cancelled or interrupted; nothing was written (exit 130)",
}


class KernelscopeError(Exception):
    """Base class: a clear message for a person, and the exit status and error kind for a
    script."""

    exit_code: int = 2
    kind: str = "data"


class UsageError(KernelscopeError):
    """The request itself is wrong (bad version string, malformed --set)."""

    exit_code = 1
    kind = "usage"


class DataError(KernelscopeError):
    """The workspace data is missing or invalid, or the operation is refused on it."""

    exit_code = 2


class WriteFailed(DataError):
    """A write could not be completed (disk full, quota, read-only file system); the file it
    was replacing is left as it was."""

    kind = "write_failed"


def write_error_reason(exc: OSError) -> str:
    """Why a write failed, in words (disk full, read-only file system, ...)."""
    return {
        errno.ENOSPC: "no space left on the device (disk full)",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file size limit exceeded",
        errno.EROFS: "read-only file system",
    }.get(exc.errno or 0, exc.strerror or str(exc))


def counted(count: int, noun: str) -> str:
    """The one plural rule for the counts a person reads (lenses, hover, command answers, CLI
    and error messages): `count` and `noun` (singular; of a phrase, its last word is made
    plural: `interpreter run`) agreeing in number, `1 experiment`, `0 experiments`."""
    return f"{count} {noun if count == 1 else noun + 's'}"


class Cancelled(KernelscopeError):
    """The user cancelled the work; nothing was written."""

    exit_code = 130
    kind = "interrupted"


class SessionEnded(Cancelled):
    """The session that asked for a write (an editor's, through the daemon) ended before the
    write began: nothing was written."""

    def __init__(self) -> None:
        super().__init__("the editor's session ended before this write began: nothing was written")


_SESSION_END: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "kernelscope_session_end", default=None
)


@contextlib.contextmanager
def for_session(end: threading.Event) -> Iterator[None]:
    """Work in this block (on this thread) is the session's whose end `end` is set at: once it
    is, a wait for a workspace lock or for the store's write lock gives up, and a lock taken
    writes nothing (`session_wait`, `refuse_if_session_ended`): nothing writes into a workspace
    once the editor has gone (the daemon's shutdown and exit, lsp/features/lifecycle.py). Work
    outside such a block (the CLI, the API) has no session: it writes when it gets the lock."""
    token, begun = _SESSION_END.set(end), _BEGUN.set(False)
    try:
        yield
    finally:
        _BEGUN.reset(begun)
        _SESSION_END.reset(token)


# Whether this work has written a file yet (atomic_io writes every file a write changes): once
# it has, the write is under way, and a wait inside it (git's commit lock after a restart's
# mask, the store's row after an iteration's record) must finish it, not leave it half done.
_BEGUN: contextvars.ContextVar[bool] = contextvars.ContextVar("kernelscope_write_begun", default=False)


def began_writing() -> None:
    """(atomic_io, before it replaces a file) This work's write is under way."""
    _BEGUN.set(True)


def _ended() -> threading.Event | None:
    """The session's end event, unless this work has begun writing: the session's end stops a
    write before it begins, never in its middle."""
    end = _SESSION_END.get()
    return end if end is not None and not _BEGUN.get() else None


def refuse_if_session_ended() -> None:
    """SessionEnded when the session of this work has ended before it began writing (checked
    after a lock is taken and before anything is written under it)."""
    end = _ended()
    if end is not None and end.is_set():
        raise SessionEnded


def session_wait(seconds: float) -> None:
    """A pause in a wait for a lock, cut short by the end of this work's session (SessionEnded)
    unless the work has begun writing."""
    end = _ended()
    if end is None:
        time.sleep(seconds)
    elif end.wait(seconds):
        raise SessionEnded


# -- the JSON kernelscope reads and writes --------------------------------------------------
# The deepest nesting of arrays and objects a workspace's JSON may have: every reader reads it
# back and prints it (the CLI's JSON and tables, the record model, the daemon's answers), far
# below the interpreter's recursion limit, and far above any record a tool writes (atrex's
# nest 4-5 levels). `memory update --set` refuses a key or value that would go deeper.
MAX_JSON_DEPTH = 100


class UnreadableJSON(json.JSONDecodeError):
    """A JSON document kernelscope does not read although it may parse: nested deeper than
    MAX_JSON_DEPTH (Python's decoder raised RecursionError at ~1000 levels, and the printers
    well before), or holding an integer of more digits than Python converts (a ValueError).
    A JSONDecodeError, so each reader takes it as it takes a corrupt file."""

    def __init__(self, msg: str, doc: str | bytes, pos: int = 0) -> None:
        ValueError.__init__(self, msg)
        self.msg, self.doc, self.pos, self.lineno, self.colno = msg, doc, pos, 1, pos + 1  # type: ignore[assignment]


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep `value`'s arrays and objects nest (a scalar 0, `{}` and `[1]` 1), counted
    without recursion; counting stops once past `limit`."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= limit:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


TOO_DEEP = f"arrays and objects nested more than {MAX_JSON_DEPTH} levels deep"


def load_json(text: str | bytes, **options: Any) -> Any:
    """The one reader of a JSON document from a workspace (a memory record, live.json, a
    README's block, definition.json): json.loads, with what it parses but kernelscope cannot
    use (too deep, too long a number: UnreadableJSON) refused as a corrupt file is, by the
    JSONDecodeError each reader already handles, never a traceback."""
    try:
        value = json.loads(text, **options)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except RecursionError:
        raise UnreadableJSON(TOO_DEEP, text) from None
    except ValueError as exc:  # Python's limit on an integer's digits (sys.int_info)
        digits = sys.get_int_max_str_digits() if "digits" in str(exc) else None
        reason = f"a number of more than {digits} digits" if digits else str(exc)
        raise UnreadableJSON(reason, text) from None
    # (a text with no more brackets than the limit cannot nest past it: the walk, ~3x the
    # parse of a large record, is left to texts that could)
    brackets = (
        text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    )
    if brackets > MAX_JSON_DEPTH and json_depth(value) > MAX_JSON_DEPTH:
        raise UnreadableJSON(TOO_DEEP, text)
    return value


class NotJSON(DataError):
    """What kernelscope was about to write into a record holds NaN or Infinity, which JSON has
    no word for (JSON.parse in Node, and so VS Code's client, rejects the document)."""


def json_text(value: Any, nulls: bool = False, **options: Any) -> str:
    """The one writer of JSON that leaves kernelscope (a record, the CLI's `--json`, the
    daemon's messages): json.dumps that never writes NaN or Infinity, tokens no JSON parser
    reads. A record refuses them (NotJSON: kernelscope writes no record it could not read as
    JSON); a document for a reader (`nulls`: the CLI's output, the daemon's messages) has null
    there, as JSON says "no number": a record another tool wrote with NaN in it is still read
    and shown, its other fields intact."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:  # (its message: "Out of range float values are not JSON compliant")
        if not nulls or "Out of range float" not in str(exc):
            raise NotJSON(
                f"refusing to write JSON holding NaN or Infinity ({exc}); nothing was written"
            ) from None
    plain = json.loads(json.dumps(value, default=options.get("default")))  # (NaN kept as a float)
    return json.dumps(_finite(plain), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    """`value` (plain JSON data, at most MAX_JSON_DEPTH deep) with null for every number that
    is not finite."""
    if isinstance(value, float):
        return value if value - value == 0 else None  # (inf - inf and nan - nan are nan)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
