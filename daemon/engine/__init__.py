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
here rather than in views/, which reads the other parts and so cannot be read by them; and the
end of the session a write was asked in (`for_session`), which every part's writes check.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import time

TYPE_CHECKING = False  # the CLI's fast path imports this module: typing and threading stay out
if TYPE_CHECKING:
    import threading
    from collections.abc import Iterator

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
