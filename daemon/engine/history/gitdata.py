"""Read-only git access for the history features: few processes, batched, never a write.

The editor asks for history hints at every cursor move, so the per-request path must not
start a git process. `HistoryKey` is read straight from the files git keeps (HEAD, the ref it
names, packed-refs, the ref folders kernelscope and atrex write) plus `stat` of memory/: a
change of any of them means a new history. Everything else (log, blame, blobs) runs once per
history and is batched: one `git cat-file --batch` for all kernel.py versions, one `git blame`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelscope.daemon.engine.memory.git_place import (
    FAILED_REF_PREFIX,
    READ_ONLY_ENV,
    READ_ONLY_OPTIONS,
    Repository,
    find_repository,
    git_environment,
)
from kernelscope.protocol import workspace_files

GIT_TIMEOUT_S = 120
EPISODE_BRANCH_PREFIX = "refs/heads/atrex/"  # atrex: atrex/long-eNNNN-<id> per episode
# the same branches in a clone of a campaign's repository: remote-tracking refs only
REMOTE_EPISODE_BRANCH_PATTERN = "refs/remotes/*/atrex/long-e*"
_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    **READ_ONLY_ENV,  # a read must never take index.lock from a writer
    "LC_ALL": "C",
}


class GitUnavailable(RuntimeError):
    """The folder is not in a git work tree (or git failed): history degrades to memory/ only."""


def run_git(cwd: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    """One git command's stdout as bytes (blob contents are not necessarily UTF-8)."""
    try:
        done = subprocess.run(
            ["git", *READ_ONLY_OPTIONS, *args],
            cwd=cwd,
            input=b"" if stdin is None else stdin,  # never the daemon's own stdin (the editor's)
            capture_output=True,
            env=git_environment(_ENV),
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git {args[0]} failed in {cwd}: {exc}") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise GitUnavailable(f"git {' '.join(args[:2])} failed in {cwd}: {message}")
    return done.stdout


_PATHS: dict[Path, Repository] = {}


def repo_paths(root: Path) -> Repository | None:
    """The repository of a workspace (memory/git_place.py: read from git's files, no process),
    kept per folder once found; not kept while there is none (the user may run `git init`)."""
    root = Path(root)
    if root not in _PATHS:
        found = find_repository(root)
        if found is None:
            return None
        _PATHS[root] = found
    return _PATHS[root]


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _read(path: Path) -> str:
    try:
        return workspace_files.read_text(path, errors="replace").strip()
    except OSError:
        return ""


def tree_stats(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """(relative name, mtime_ns, size) of every file under `folder`, sorted."""
    found: list[tuple[str, int, int]] = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((entry.path[len(str(folder)) :], info.st_mtime_ns, info.st_size))
    found.sort()
    return tuple(found)


def resolve_head(paths: Repository) -> str | None:
    """HEAD's commit, read from git's files (no process): HEAD, the ref it names, packed-refs."""
    head = _read(paths.git_dir / "HEAD")
    if not head.startswith("ref:"):
        return head or None
    ref = head[4:].strip()
    for folder in (paths.git_dir, paths.common_dir):
        value = _read(folder / ref)
        if value:
            return value
    for line in _read(paths.common_dir / "packed-refs").splitlines():
        if line.endswith(" " + ref):
            return line.split(" ", 1)[0]
    return None


HistoryKey = tuple[object, ...]


def history_key(
    root: Path, memory_dir: Path, extra: tuple[object, ...] = (), scan_files: bool = True
) -> HistoryKey:
    """What identifies one state of a workspace's history, read without starting a process.

    HEAD's commit, packed-refs and the folders of the failed-version refs and atrex episode
    branches, local and remote-tracking (git writes a loose ref by renaming a lock file into
    its folder, so the folder's mtime moves), the atrex supervisor's state.json, and memory/:
    with `scan_files`, (name, mtime, size) of every file in it (about 3 ms for a thousand
    records), else the folder's own stat (creations, deletions and atomic renames; not an
    in-place rewrite of a file). `extra` carries what the caller adds (the experiment store's
    watermark)."""
    paths = repo_paths(root)
    memory = tree_stats(memory_dir) if scan_files else _stat(memory_dir)
    if paths is None:
        return ("no-git", memory, extra)
    refs = paths.common_dir / "refs"
    failed = refs / FAILED_REF_PREFIX[len("refs/") : -1]
    return (
        resolve_head(paths),
        _stat(paths.common_dir / "packed-refs"),
        _stat(paths.common_dir / "shallow"),  # a fetch that deepens the history
        _stat(failed),
        _stat(refs / EPISODE_BRANCH_PREFIX[len("refs/") : -1]),
        _remote_episode_folders(refs / "remotes"),
        memory,
        _stat(root / ".atrex_long_horizon" / "state.json"),
        extra,
    )


def _remote_episode_folders(remotes: Path) -> tuple[object, ...]:
    """The stat of every remote's `atrex/` folder (a fetch of episode branches moves it)."""
    try:
        names = sorted(entry.name for entry in remotes.iterdir())
    except OSError:
        return ()
    return tuple((name, _stat(remotes / name / "atrex")) for name in names)


def refs_with_prefix(root: Path, *prefixes: str) -> dict[str, str]:
    """ref name -> commit, for every ref under the prefixes (one process)."""
    out = run_git(root, "for-each-ref", "--format=%(objectname) %(refname)", *prefixes, check=False)
    found: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        sha, _, name = line.partition(" ")
        if sha and name:
            found[name] = sha
    return found


def batch_check(root: Path, names: list[str]) -> dict[str, str | None]:
    """Object name (`<commit>:<path>`, a short hash, a ref) -> full object id, or None."""
    if not names:
        return {}
    unique = list(dict.fromkeys(names))
    out = run_git(
        root,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        stdin="\n".join(unique).encode() + b"\n",
    )
    found: dict[str, str | None] = {}
    for name, line in zip(unique, out.decode("utf-8", "replace").splitlines(), strict=False):
        parts = line.split()
        found[name] = parts[0] if len(parts) == 2 and parts[1] != "missing" else None
    return found


def read_blobs(root: Path, blobs: list[str]) -> dict[str, str]:
    """blob id -> its text (UTF-8, undecodable bytes replaced), all in one process."""
    unique = [b for b in dict.fromkeys(blobs) if b]
    if not unique:
        return {}
    out = run_git(root, "cat-file", "--batch", stdin="\n".join(unique).encode() + b"\n")
    found: dict[str, str] = {}
    position = 0
    for blob in unique:
        end = out.index(b"\n", position)
        header = out[position:end].split()
        position = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        found[blob] = out[position : position + size].decode("utf-8", "replace")
        position += size + 1  # the content is followed by a newline
    return found


@dataclass(frozen=True)
class LogEntry:
    commit: str
    subject: str
    parents: tuple[str, ...]


def log_commits(root: Path, revisions: list[str], path: str | None = None) -> list[LogEntry]:
    """Commits reachable from `revisions` (touching `path`, relative to `root`, when given),
    newest first. Run it at the top level with a top-level-relative path."""
    if not revisions:
        return []
    args = ["log", "--format=%H%x00%P%x00%s", *revisions]
    if path is not None:
        args += ["--", path]
    out = run_git(root, *args, check=False)
    entries = []
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split("\x00")
        if len(parts) == 3:
            entries.append(LogEntry(parts[0], parts[2], tuple(parts[1].split())))
    return entries


@dataclass(frozen=True)
class BlameEntry:
    """Who last changed one line of the committed file."""

    commit: str
    subject: str
    original_line: int  # 1-based line number in that commit's version of the file
    boundary: bool = False  # blame went no further back (a root commit or a shallow clone's edge)


def shallow_commits(paths: Repository) -> frozenset[str]:
    """The commits where a shallow clone's history stops (`shallow`): git shows them without
    parents, so blame gives them every older line too; those lines' origin is unknown."""
    try:
        text = workspace_files.read_text(paths.common_dir / "shallow", errors="replace")
    except OSError:
        return frozenset()
    return frozenset(text.split())


def blame(root: Path, path: str, revision: str = "HEAD") -> list[BlameEntry]:
    """`git blame --porcelain` of a committed file (`path` relative to `root`, the top level):
    one entry per line of it ([] on error), each marked when its commit is a `boundary` (see
    `shallow_commits`)."""
    try:
        out = run_git(root, "blame", "--porcelain", revision, "--", path)
    except GitUnavailable:
        return []
    subjects: dict[str, str] = {}
    boundaries: set[str] = set()
    entries: list[BlameEntry] = []
    current: tuple[str, int] | None = None
    for raw in out.decode("utf-8", "replace").split("\n"):
        if raw.startswith("\t"):
            if current is not None:
                commit = current[0]
                entries.append(BlameEntry(commit, subjects.get(commit, ""), current[1], commit in boundaries))
            current = None
            continue
        head, _, rest = raw.partition(" ")
        if len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head):
            fields = rest.split()
            current = (head, int(fields[0]) if fields else 0)
        elif head == "summary" and current is not None:
            subjects[current[0]] = rest
        elif raw == "boundary" and current is not None:
            boundaries.add(current[0])
    return entries
