"""Crash-safe, concurrency-safe file writes for workspaces.

Agents, the CLI and the daemon all write `memory/v*.json`. A write goes to a temp file in
the same directory, is fsynced, renamed over the target (atomic on POSIX) and the
directory is fsynced, so a crash at any instant leaves either the old or the new content.
Read-modify-write sequences run under a per-workspace lock (`filelock`, an fcntl lock), so
concurrent writers never lose an update.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from kernelscope.daemon.engine.errors import DataError, WriteFailed

LOCK_NAME = ".kernelscope.lock"
TEMP_PREFIX = ".kernelscope-tmp-"


def fsync_directory(directory: Path) -> None:
    """Flush a directory entry (the rename) to disk."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_failed(path: Path, exc: OSError) -> WriteFailed:
    reason = {
        errno.ENOSPC: "no space left on the device (disk full)",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file size limit exceeded",
        errno.EROFS: "read-only file system",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return WriteFailed(f"could not write {path}: {reason}; {path.name} was left as it was")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers and crashes see old or new, never half.
    A failed write (disk full, quota) raises WriteFailed and leaves no temp file behind."""
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
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(temp_name, path.stat().st_mode & 0o7777)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_directory(directory)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_all(files: list[tuple[Path, str]]) -> None:
    """Write several files all or nothing, as far as a failure can be undone: when one write
    fails (disk full), the files already replaced get their old content back (the replaced
    files' space is free again by then) and WriteFailed says so. Only a SIGKILL between two
    renames can leave some written and some not; each file is still old or new, never half."""
    originals = [(path, path.read_bytes() if path.exists() else None) for path, _ in files]
    for done, (path, text) in enumerate(files):
        try:
            atomic_write_text(path, text)
        except WriteFailed as failure:
            unrestored = []
            for earlier, old in originals[:done]:
                try:
                    if old is None:
                        earlier.unlink(missing_ok=True)
                    else:
                        atomic_write_bytes(earlier, old)
                except (WriteFailed, OSError):
                    unrestored.append(earlier.name)
            if unrestored:
                raise WriteFailed(
                    f"{failure}; {', '.join(unrestored)} already had the new content and could "
                    "not be restored"
                ) from failure
            raise WriteFailed(f"{failure}; no file was changed") from failure


def detect_indent(text: str) -> int:
    """The indent width a JSON file was written with (2 if it cannot be told)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) != len(line):
            return len(line) - len(stripped)
    return 2


def dump_json(data: Any, indent: int = 2) -> str:
    """JSON the way the seed's memory manager writes it: indented, UTF-8, final newline."""
    return json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"


@contextlib.contextmanager
def workspace_lock(lock_dir: Path, timeout: float = 60.0, name: str = LOCK_NAME) -> Iterator[None]:
    """Hold one of the workspace's locks (a file in `lock_dir`, shared by all processes): the
    memory write lock by default. Different names are independent locks, so a holder of one
    may take the other (never the same one twice: flock would wait for itself)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_dir / name), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise DataError(
            f"another kernelscope process has held {lock_dir / name} for {timeout:g} s; "
            "try again when it is done"
        ) from None
    try:
        yield
    finally:
        lock.release()
