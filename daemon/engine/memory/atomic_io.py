"""Crash-safe, concurrency-safe file writes for workspaces.

Agents, the CLI and the daemon all write `memory/v*.json`. A write goes to a temp file in
the same directory, is fsynced, renamed over the target (atomic on POSIX) and the
directory is fsynced, so a crash at any instant leaves either the old or the new content.
Read-modify-write sequences run under a per-workspace lock (`flock` on a lock file), so
concurrent writers never lose an update. A path that is a link, a folder or anything else
that is no plain file is refused, nothing written (core.refuse_if_in_the_way): a write never
leaves the folder it names through a link a cloned workspace may carry.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import (
    DataError,
    KernelscopeError,
    WriteFailed,
    began_writing,
    json_text,
    load_json,
    refuse_if_session_ended,
    session_wait,
    write_error_reason,
)
from kernelscope.daemon.engine.memory.core import (
    FILE_RE,
    JOURNAL_NAME,
    MEMORY_DIR,
    not_a_file,
    refuse_if_in_the_way,
)
from kernelscope.daemon.engine.memory.git_place import find_repository
from kernelscope.protocol import workspace_files

LOCK_NAME = ".kernelscope.lock"
ITERATION_LOCK_NAME = ".kernelscope-iteration.lock"
RESTART_LOCK_NAME = ".kernelscope-restart.lock"
TEMP_PREFIX = ".kernelscope-tmp-"


def fsync_directory(directory: Path) -> None:
    """Flush a directory entry (the rename) to disk."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_failed(path: Path, exc: OSError) -> WriteFailed:
    return WriteFailed(f"could not write {path}: {write_error_reason(exc)}; {path.name} was left as it was")


def current_umask() -> int:
    """The process's umask: /proc's view (thread-safe), else by setting it and setting it back
    (there is no getter; done once, at first use)."""
    global _UMASK
    if _UMASK is None:
        try:
            status = Path("/proc/self/status").read_text()
            _UMASK = int(
                next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:")), 8
            )
        except (OSError, StopIteration, ValueError, IndexError):
            _UMASK = os.umask(0o022)
            os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers and crashes see old or new, never half.
    A failed write (disk full, quota) raises WriteFailed and leaves no temp file behind.

    A link at `path`, or a folder or special file, is refused (DataError, nothing written,
    core.refuse_if_in_the_way): renaming onto a link would turn it into a plain file and leave
    its target behind unchanged, and writing its target would write wherever a workspace's
    link points (.git/config, another workspace's record under another lock)."""
    refuse_if_in_the_way(path)
    try:
        _atomic_write_bytes(path, data)
    except OSError as exc:
        raise _write_failed(path, exc) from exc


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX + path.name + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):  # a replaced file keeps its mode, a new one the umask's
            os.chmod(temp_name, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~current_umask())
        began_writing()  # (from here on the session's end no longer stops this work: engine._ended)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_directory(directory)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


class PartlyWritten(WriteFailed):
    """atomic_write_all failed half-way and some files could not get their old content back."""


def restore(path: Path, old: bytes | None) -> bool:
    """Give `path` back what it held before a write (`old`; None: it did not exist), atomically;
    False where that fails too (the disk still full)."""
    try:
        if old is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(path, old)
    except (WriteFailed, OSError):
        return False
    return True


def atomic_write_all(files: list[tuple[Path, str]]) -> None:
    """Write several files of one directory all or nothing.

    Crash: the new contents first go to a journal (itself written atomically), with a digest
    of what each file held before, then each file is replaced, then the journal is deleted. A
    writer killed in between leaves the journal, and `replay_journal` (run by the next writer,
    under the workspace lock) finishes the job; until then kernelscope's readers show the files
    as it will leave them (`plan_journal`) and write nothing, so no kernelscope surface shows
    some files written and others not. Failure (disk full): the files already replaced get
    their old content back and WriteFailed says so (PartlyWritten where one of them could not
    be restored: it names the files left with the new content and those that kept their old
    one)."""
    if not files:
        return
    directory = files[0][0].parent
    if any(path.parent != directory for path, _ in files):
        raise ValueError("atomic_write_all writes files of one directory")
    for path, _ in files:  # (before anything is written: a refusal half-way would leave the rest)
        refuse_if_in_the_way(path)
    originals = [(path, _read_or_none(path)) for path, _ in files]
    journal = directory / JOURNAL_NAME
    atomic_write_text(
        journal,
        json.dumps(
            {
                "files": {path.name: text for path, text in files},
                "before": {path.name: _digest(old) for path, old in originals},
            }
        ),
    )
    for done, (path, text) in enumerate(files):
        try:
            atomic_write_text(path, text)
        except WriteFailed as failure:
            unrestored = [earlier.name for earlier, old in originals[:done] if not restore(earlier, old)]
            journal.unlink(missing_ok=True)
            if unrestored:
                kept = [other.name for other, _ in files if other != path and other.name not in unrestored]
                raise PartlyWritten(
                    f"{failure}; {', '.join(unrestored)} already had the new content and could "
                    "not be restored" + (f"; {', '.join(kept)} kept their old content" if kept else "")
                ) from failure
            raise WriteFailed(f"{failure}; no file was changed") from failure
    journal.unlink()
    fsync_directory(directory)


def _digest(content: bytes | None) -> str | None:
    import hashlib  # (3 ms of OpenSSL the CLI fast path's `memory update` does not pay)

    return None if content is None else hashlib.sha256(content).hexdigest()


def _read_or_none(path: Path) -> bytes | None:
    try:
        return workspace_files.read_bytes(path)
    except FileNotFoundError:
        return None


class NotOurJournal(ValueError):
    """A journal file kernelscope did not write (it does not parse, or names a file outside the
    records): the replay removes it without effect, a reader ignores it."""


class JournalPlan:
    """What finishing a cut-short multi-file write does, file by file (`plan_journal`): the
    one rule the replay on disk (`replay_journal`, under the lock) and the readers' view of the
    memory (records.py: the journal applied in memory, nothing written) both follow. (A plain
    class: a named tuple costs the CLI fast path's `memory update` start-up, core.RawFile.)"""

    __slots__ = ("kept", "writes")

    def __init__(self, writes: dict[str, str], kept: list[str]) -> None:
        self.writes = writes  # name: the text the replay gives it
        self.kept = kept  # changed by another writer since the cut (or no file now): left as they are


def plan_journal(directory: Path, names: re.Pattern[str]) -> JournalPlan | None:
    """The plan of the journal in `directory` (None: there is none); NotOurJournal for one
    kernelscope did not write: it writes them atomically, so one that does not parse, or names
    a file outside `names`, is not its own. Reads only.

    A file is written only while it still holds what it held before the cut-short write (its
    digest is in the journal). Writers that do not take kernelscope's lock (the seed's
    `memory_manager.py`, an agent's own script) may have changed it since; their later edit is
    kept, not overwritten with the older intent. A journal of a kernelscope from before the
    digests is replayed as it says."""
    journal = directory / JOURNAL_NAME
    if journal.is_symlink() or not_a_file(journal) is not None:  # (never opened: /dev/stdin blocks)
        raise NotOurJournal  # kernelscope writes its journal as a plain file, never a link
    try:
        data = load_json(workspace_files.read_text(journal))
        files = data["files"]
        before = data.get("before")
        if not isinstance(files, dict) or not all(
            isinstance(name, str) and names.fullmatch(name) and isinstance(text, str)
            for name, text in files.items()
        ):
            raise NotOurJournal
        if before is not None and not (
            isinstance(before, dict)
            and set(before) == set(files)
            and all(digest is None or isinstance(digest, str) for digest in before.values())
        ):
            raise NotOurJournal
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NotOurJournal from exc
    writes: dict[str, str] = {}
    kept: list[str] = []
    for name, text in files.items():
        path = directory / name
        if path.is_symlink() or not_a_file(path) is not None:  # a folder or link since: never written
            kept.append(name)
            continue
        if before is not None:
            current = _digest(_read_or_none(path))
            if current == _digest(text.encode("utf-8")):
                continue  # replaced before the crash
            if current != before[name]:
                kept.append(name)  # changed by someone else since: theirs is newer
                continue
        writes[name] = text
    return JournalPlan(writes, kept)


def replay_journal(directory: Path, names: re.Pattern[str]) -> list[str]:
    """Finish a multi-file write interrupted by a crash (call under the workspace lock), as
    `plan_journal` says; a warning names the files kept because another writer changed them
    since. Returns the names written. A journal kernelscope did not write is removed without
    effect."""
    journal = directory / JOURNAL_NAME
    try:
        plan = plan_journal(directory, names)
    except NotOurJournal:
        journal.unlink(missing_ok=True)
        return []
    if plan is None:
        return []
    for name, text in plan.writes.items():
        atomic_write_text(directory / name, text)
    journal.unlink()
    fsync_directory(directory)
    if plan.kept:
        import logging  # (the CLI fast path's writes pay for it only here)

        logging.getLogger(__name__).warning(
            "finished a cut-short multi-file write in %s; did not write %s: another writer changed "
            "%s since, or %s no plain file now (a link, a folder), which no write goes through",
            directory,
            ", ".join(plan.kept),
            "it" if len(plan.kept) == 1 else "them",
            "it is" if len(plan.kept) == 1 else "each is",
        )
    return list(plan.writes)


def detect_indent(text: str) -> int:
    """The indent width a JSON file was written with (2 if it cannot be told)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) != len(line):
            return len(line) - len(stripped)
    return 2


def dump_json(data: Any, indent: int = 2) -> str:
    """JSON the way the seed's memory manager writes it: indented, UTF-8, final newline."""
    return json_text(data, indent=indent, ensure_ascii=False) + "\n"


def lock_dir_of(workspace: Path) -> Path:
    """Where a workspace's locks live: in the git directory of the repository (or worktree)
    holding it, so that no untracked file appears in its work tree: `kernelscope/` for a
    workspace at the top, `kernelscope/workspaces/<its path from the top>/` for one below it
    (each workspace its own locks); outside git, its memory/. The repository is git_place's
    (the one rule: the same that kernelscope's commits, history and probes use)."""
    repository = find_repository(workspace)
    if repository is None:
        return workspace / MEMORY_DIR
    below = repository.prefix.rstrip("/")
    return repository.git_dir / "kernelscope" / (Path("workspaces", below) if below else "")


@contextlib.contextmanager
def _workspace_locks(workspace: Path, name: str, timeout: float) -> Iterator[None]:
    """The workspace's lock `name` (lock_dir_of), and its memory/ copy too where one exists: an
    earlier kernelscope locked a workspace below a repository's top there, and one still
    running after an upgrade (a daemon) takes only that copy (it creates the file, so a
    workspace it wrote has it). The copy is never created here; delete it once no earlier
    kernelscope runs (docs/memory.md)."""
    lock_dir, legacy = lock_dir_of(workspace), workspace / MEMORY_DIR
    with contextlib.ExitStack() as held:
        if lock_dir != legacy and (legacy / name).is_file():
            held.enter_context(workspace_lock(legacy, timeout, name))
        held.enter_context(workspace_lock(lock_dir, timeout, name))
        yield


@contextlib.contextmanager
def memory_write_lock(workspace: Path) -> Iterator[None]:
    """The memory write lock, which every memory write holds (the engine's and the CLI fast
    path's): a temp file found while holding it is the orphan of a writer that was killed, and
    a journal the cut-short write of one (both finished or removed first)."""
    memory_dir = workspace / MEMORY_DIR
    with _workspace_locks(workspace, LOCK_NAME, 60.0):
        for orphan in memory_dir.glob(TEMP_PREFIX + "*"):
            with contextlib.suppress(OSError):
                orphan.unlink()
        replay_journal(memory_dir, FILE_RE)
        yield


def iteration_lock(workspace: Path) -> contextlib.AbstractContextManager[None]:
    """The iteration lock: an iteration's write phase (its version, record and commits), the
    finishing of one cut short, and a partial restart's mask with its commit hold it. Order:
    the iteration lock, then the memory write lock, then git's commit lock (Git.committing),
    each taken at most once."""
    return _workspace_locks(workspace, ITERATION_LOCK_NAME, 600.0)


def restart_lock(workspace: Path, timeout: float) -> contextlib.AbstractContextManager[None]:
    """Held by a partial restart from its mask to its report (workflows/restart.py): while it
    is held, the version the restart's mark names is its agent's (workflows/iterate.py
    refuse_if_promised). Taken under the iteration lock; others ask for it under that lock
    only with a short, bounded wait (restart_in_flight), and a restart holding it never waits
    for the iteration lock."""
    return workspace_lock(lock_dir_of(workspace), timeout, RESTART_LOCK_NAME)


def restart_in_flight(workspace: Path) -> bool:
    """Whether a partial restart holds the workspace's restart lock (from its mask to its
    report). Asking writes nothing, not even the lock file or its folder (a question before a
    yes is no write): a shared flock on the file a restart made, with a short wait, which
    only a restart's exclusive hold refuses; no file, no restart ever held it. Outside git no
    restart takes it."""
    lock_dir = lock_dir_of(workspace)
    if lock_dir == workspace / MEMORY_DIR:
        return False
    try:
        fd = _shared_hold(lock_dir / RESTART_LOCK_NAME, 0.25)
    except (KernelscopeError, OSError):  # held by a restart, until its report (or the session ended)
        return True
    if fd is not None:
        os.close(fd)
    return False


class RestartRunning(DataError):
    """A write refused while a partial restart runs in the workspace (nothing was changed)."""

    def __init__(self, action: str) -> None:
        super().__init__(
            f"a partial restart (kernelscope restart) is running in this workspace and its agent has "
            f"not finished: refusing to {action}, nothing was changed; wait for the restart's report, "
            "or cancel it"
        )


def refuse_if_restarting(workspace: Path, action: str) -> None:
    """A write that would take from a running partial restart's agent the version its brief
    promised it (a mask-half hands out a new next version and replaces the restart's mark; a
    second restart masks again) is refused while the restart runs: RestartRunning, nothing
    changed. The restart's own agent records through `kernelscope iterate`, which has its own
    rule (workflows/iterate.py refuse_if_promised)."""
    if restart_in_flight(workspace):
        raise RestartRunning(action)


@contextlib.contextmanager
def workspace_lock(lock_dir: Path, timeout: float = 60.0, name: str = LOCK_NAME) -> Iterator[None]:
    """Hold one of the workspace's locks (a file in `lock_dir`, shared by all processes): the
    memory write lock by default. Different names are independent locks, so a holder of one
    may take the other (never the same one twice: flock would wait for itself).

    The lock is `flock` on the lock file, taken with the standard library: `filelock` takes the
    same lock (so kernelscope versions that used it exclude this one and are excluded by it) but
    costs 50 ms of imports, more than the seed's whole memory script an agent runs in its place
    (docs/benchmarks.md, cli_bench). Where flock is missing (Windows, a file system without it),
    filelock does the job.

    Taken for a session that has ended (engine.for_session: the editor has gone), or ending
    while it waits, it gives up at once (SessionEnded) and nothing is written under it, unless
    the work has already written a file (engine.began_writing): then it waits as without a
    session, so a write that began is finished (a restart's mask committed), never left half
    done."""
    path = lock_dir / name
    refuse_if_session_ended()
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
        held = _flock(path, timeout)
    except _NoFlock:
        held = None
    except OSError as exc:  # a folder this process may not write: a read-only mount, a sandbox
        raise WriteFailed(
            f"could not take kernelscope's lock {path}: {write_error_reason(exc)}; nothing was written "
            f"(every write to the workspace takes it: {lock_dir} must be writable, which an "
            "agent's sandbox may forbid, e.g. Codex's workspace-write for .git)"
        ) from exc
    if held is None:
        with _filelock(path, timeout):
            refuse_if_session_ended()
            yield
        return
    try:
        refuse_if_session_ended()  # (it may have ended as the lock was taken)
        yield
    finally:
        os.close(held)  # closing the only descriptor of the open file releases the flock


class _NoFlock(Exception):
    """flock is not available here (no fcntl module, or the file system refuses it)."""


_NO_FLOCK_ERRNOS = {errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP}


def _flock(path: Path, timeout: float) -> int:
    """The descriptor that holds an exclusive flock on `path`, polled until `timeout` (the
    lock file is opened read-only when it is not writable: flock needs no write access)."""
    try:
        import fcntl  # noqa: F401 - (its absence is _NoFlock, before any file is created)
    except ImportError:
        raise _NoFlock from None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # (a pipe: never waits)
    _flock_fd(fd, path, timeout, shared=False)
    return fd


def _flock_fd(fd: int, path: Path, timeout: float, shared: bool) -> None:
    """flock `fd` (of `path`), polled until `timeout`; on failure `fd` is closed: DataError
    (held that long), _NoFlock, SessionEnded, OSError."""
    try:
        import fcntl
    except ImportError:
        os.close(fd)
        raise _NoFlock from None
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            return
        except BlockingIOError:  # held by another open file (another process or thread)
            if time.monotonic() >= deadline:
                os.close(fd)
                raise _held(path, timeout) from None
            try:
                session_wait(pause)  # (cut short by the session's end)
            except BaseException:
                os.close(fd)
                raise
            pause = min(pause * 2, 0.05)
        except OSError as exc:
            os.close(fd)
            if exc.errno in _NO_FLOCK_ERRNOS:
                raise _NoFlock from exc
            raise


def _shared_hold(path: Path, timeout: float) -> int | None:
    """A shared flock on the lock file `path` if it exists, creating nothing (how a reader or a
    question asks about a lock without writing): its fd, held; None where there is no file (it
    was never taken), one this process may not read, or no flock; DataError (held exclusively
    that long), SessionEnded or OSError from _flock_fd otherwise."""
    try:  # (never blocking: a lock file that is a named pipe would wait for a writer)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe, a device: no lock anyone takes
        os.close(fd)
        return None
    try:
        _flock_fd(fd, path, timeout, shared=True)
    except _NoFlock:
        return None
    return fd


@contextlib.contextmanager
def no_writer_inside(workspace: Path, timeout: float = 5.0) -> Iterator[bool]:
    """For a reader of memory/, which writes nothing, not even a lock file: waits (up to
    `timeout`) until no writer holds the memory write lock, and keeps writers out while it
    reads (a shared flock on the lock files that exist; one that does not was never taken,
    and none is created). Yields True then; False where a writer still holds it (or the
    session ended meanwhile): a journal found now is that live writer's, not a cut-short one.
    Where flock is missing, True: nothing to wait on."""
    # (in the writers' order, _workspace_locks: memory/'s copy first; the other order made a
    # reader and a writer each wait the other's timeout)
    paths = dict.fromkeys([workspace / MEMORY_DIR / LOCK_NAME, lock_dir_of(workspace) / LOCK_NAME])
    held: list[int] = []
    free = True
    try:
        for path in paths:
            try:
                fd = _shared_hold(path, timeout)
            except (KernelscopeError, OSError):  # still held (or the session ended)
                free = False
                break
            if fd is not None:
                held.append(fd)
        yield free
    finally:
        for fd in held:
            os.close(fd)


@contextlib.contextmanager
def _filelock(path: Path, timeout: float) -> Iterator[None]:
    from filelock import FileLock, Timeout  # where flock is missing only (docstring above)

    lock = FileLock(str(path), timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:  # in short tries, so that the session's end cuts the wait short
        try:
            lock.acquire(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            break
        except Timeout:
            if time.monotonic() >= deadline:
                raise _held(path, timeout) from None
            refuse_if_session_ended()
    try:
        yield
    finally:
        lock.release()


def _held(path: Path, timeout: float) -> DataError:
    return DataError(
        f"another kernelscope process has held {path} for {timeout:g} s; try again when it is done"
    )
