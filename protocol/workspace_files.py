"""The one reader of a workspace's files (README.md, kernel.py, the kinds' JSON files, the
supervisor's files, git's files read directly, the user's config.toml): stdlib only, so the
daemon's discovery at initialize, the CLI's fast path and the benchmark child all import it
without pydantic.

A workspace may be a clone nobody vetted, and its files are read by rules that run on their
own (discovery for every folder an editor opens, lenses, hover). A README.md that is a named
pipe blocked the reader forever; one linked to /dev/stdin read the daemon's stdin, which is
the editor's JSON-RPC channel (its messages swallowed, the daemon waiting for an EOF); one
linked to /dev/zero never ends. So a file is read only when it is a regular file (a link to
one is followed): what stands there is looked at first (`os.stat`, nothing opened), then the
file is opened without blocking (`O_NONBLOCK`, `O_NOCTTY`) and the open descriptor checked
again (`fstat`: it may have been swapped in between), and anything else is refused with
`RefusedFile` naming the path and what it is, nothing read. Whole-file reads stop at
`MAX_FILE_BYTES`: a larger file is refused the same way (a README or kernel.py of gigabytes
is no workspace file, and would fill the daemon's memory).

`RefusedFile` is an `OSError`, so every caller's "cannot read" path answers it as its surface
answers an unreadable file (docs/reliability.md).
"""

from __future__ import annotations

import errno
import os
import stat

# The most a whole-file read takes (64 MiB): far above any README, kernel.py or ground-truth
# file a workspace holds, far below what would hurt a daemon that keeps a few of them.
MAX_FILE_BYTES = 64 << 20
_CHUNK = 1 << 20


class RefusedFile(OSError):
    """A workspace file kernelscope does not read: not a regular file (a named pipe, a device
    such as /dev/stdin or /dev/zero, a socket, a folder), or larger than `MAX_FILE_BYTES`.
    Nothing was read from it. `strerror` says why in words; str() names the path too."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(errno.EINVAL, reason, os.fspath(path))

    def __str__(self) -> str:
        return f"cannot read {self.filename}: {self.strerror}"


def kind_of(mode: int) -> str | None:
    """What a file of `mode` is, in words, when it is no regular file (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """What stands at `path` when it is there but no regular file (a link followed), in words
    ("a named pipe (FIFO)"); None for a regular file, or for nothing there. Looks, never opens."""
    try:
        return kind_of(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None


def _refusal(path: str | os.PathLike[str], what: str) -> RefusedFile:
    try:
        link = f"a link to {os.readlink(path)}, " if os.path.islink(path) else ""
    except OSError:
        link = ""
    return RefusedFile(path, f"it is {link}{what}, not a regular file, and was not read")


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The whole file at `path`; RefusedFile when it is no regular file or holds more than
    `limit` bytes (nothing read), the OSError of the system otherwise (FileNotFoundError...)."""
    what = kind_of(os.stat(path).st_mode)  # (follows a link; a pipe or a device is never opened)
    if what is not None:
        raise _refusal(path, what)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        what = kind_of(os.fstat(fd).st_mode)  # (swapped for a pipe since the stat: still refused)
        if what is not None:
            raise _refusal(path, what)
        chunks = []
        size = 0
        while size <= limit:  # (st_size is no bound: a file may grow, /proc's say 0)
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise RefusedFile(
            path,
            f"it is larger than {limit >> 20} MiB (more than any workspace file holds), and was not read",
        )
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], errors: str = "strict", limit: int = MAX_FILE_BYTES) -> str:
    """`read_bytes` decoded as UTF-8 (`errors` as for `bytes.decode`), newlines as
    `Path.read_text` gives them (universal: \\r\\n and \\r read as \\n)."""
    text = read_bytes(path, limit).decode("utf-8", errors)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
