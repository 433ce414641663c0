"""Scratch copies: every command kernelscope runs on a workspace runs in a copy of it.

A workspace belongs to the agent or person optimizing it; kernelscope only observes it unless
asked to write (iterate, mask-half, record). The commands it runs are not so polite: atrex's
`test_kernel.py` writes `traces.jsonl` and `submission.json` into its working directory (and
`memory/v<N>.json` without `--no-memory`), Python drops `__pycache__/` next to every module it
imports, and a kernel may write wherever it likes relative to its file. So the gate command,
the harness runner and the editor's background probes run in a temporary copy outside the
workspace, with `PYTHONDONTWRITEBYTECODE=1` and cache directories kept out of the workspace,
and the copy is deleted afterwards.

What is copied: in a git work tree, the files git would show, i.e. tracked files plus
untracked files that are not ignored (`git ls-files --cached --others --exclude-standard`).
That is what the workspace's own tools treat as the workspace: ignored files are outputs
(`traces.jsonl`, `submission.json`, `*.ncu-rep`, caches) or the orchestrator's runtime
symlinks (`/reference`, `/gpu-wiki`, `/reference-projects`: whole source trees), none of
which a gate reads, save one: a kind's own evaluator may read an ignored runtime that the
kind names (`kinds.OwnGate.runtime`: Atrex-Bench's `test_kernel.py` calls the gitignored
`atrex-bench/scripts/run_eval.py` and `atrex-bench/src/atrex_bench/`), and those paths, and
only those, are copied too (read from the workspace, never written). Outside git, a plain
copy that skips `.git` and cache or environment directories (`__pycache__`, `.venv`,
`node_modules`, any directory holding `pyvenv.cfg`).
Symbolic links are copied as links (never followed into a directory), re-pointed so that a
link into the workspace lands in the copy and a link out of it still reaches its target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import WriteFailed, write_error_reason
from kernelscope.daemon.engine.memory.git_place import git_environment
from kernelscope.protocol.vocabulary import KERNEL_FILE

SKIP_DIRS = frozenset(
    {
        ".git",
        "__pycache__",
        ".venv",
        "venv",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".ipynb_checkpoints",
    }
)
GIT_TIMEOUT_S = 60.0
GIT_LS_FILES = (
    "git",
    "-c",
    "core.quotepath=off",
    "ls-files",
    "-z",
    "--cached",
    "--others",
    "--exclude-standard",
)
# Where Python, Triton and torch put caches; any of them pointing into the workspace is moved
# into the scratch directory (a relative value already resolves there: the child's cwd).
CACHE_VARIABLES = ("TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _writable(path: Path) -> bool:
    """Whether this process may make `path` (its nearest existing folder is writable)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return os.access(path, os.W_OK)


def _git_listing(workspace: Path) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored paths relative to `workspace`; None when it is not
    in a git work tree (or git is missing or lists nothing, e.g. a folder a parent repository
    ignores): the caller then walks the tree instead."""
    env = git_environment()  # (no inherited GIT_DIR: the workspace's own repository)
    try:
        done = subprocess.run(
            [*GIT_LS_FILES],
            cwd=workspace,
            stdin=subprocess.DEVNULL,  # never the daemon's own stdin (the editor's)
            env=env,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = sorted({n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    return names or None


def _is_environment(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


def _walk(workspace: Path) -> list[str]:
    """Every file (and link) under `workspace` except .git and cache/environment directories."""
    names: list[str] = []
    for current, dirs, files in os.walk(workspace, followlinks=False):
        here = Path(current)
        kept = []
        for name in dirs:
            path = here / name
            if path.is_symlink():
                names.append(path.relative_to(workspace).as_posix())  # copied as a link
            elif name not in SKIP_DIRS and not _is_environment(path):
                kept.append(name)
        dirs[:] = kept
        names.extend((here / name).relative_to(workspace).as_posix() for name in files)
    return sorted(names)


def workspace_files(workspace: Path, ignored: tuple[str, ...] = ()) -> list[str]:
    """The relative paths a scratch copy of `workspace` holds (see the module docstring):
    `ignored` names paths (files or folders, relative) copied even when git ignores them."""
    listed = _git_listing(workspace)
    if listed is None:
        return _walk(workspace)
    shown = set(listed)
    kept = [
        name
        for name in ignored
        if name not in shown
        and not any(n.startswith(name.rstrip("/") + "/") for n in shown)
        and os.path.lexists(workspace / name)
    ]
    return sorted([*listed, *kept])


def _copy_link(source: Path, target: Path, workspace: Path, root: Path) -> None:
    link = os.readlink(source)
    resolved = (source.parent / link).resolve() if not os.path.isabs(link) else Path(link).resolve()
    if _inside(resolved, workspace):
        # into the workspace: the same place in the copy (relative links already are)
        new = link if not os.path.isabs(link) else str(root / resolved.relative_to(workspace))
    else:
        new = str(resolved)  # out of the workspace: the original target, absolute
    os.symlink(new, target)


def _copy_tree(source: Path, target: Path) -> None:
    """A directory git lists as one entry (a submodule): copied whole, links as links."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIP_DIRS or _is_environment(Path(directory) / n)}

    shutil.copytree(source, target, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def copy_workspace(workspace: Path, root: Path, ignored: tuple[str, ...] = ()) -> int:
    """Copy `workspace` (resolved) into the new directory `root`, with the `ignored` paths a
    kind's evaluator reads; returns the files copied. A path the work tree no longer holds is
    skipped: one that vanished since it was listed (an agent deleting a file), or one git's
    index still lists under a folder that is now a file (`memory/v0.json` after memory/ became
    a file: the copy holds the file, as the work tree does)."""
    root.mkdir(parents=True)
    copied = 0
    for name in workspace_files(workspace, ignored):
        source, target = workspace / name, root / name
        if not os.path.lexists(source):
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                _copy_link(source, target, workspace, root)
            elif source.is_dir():
                _copy_tree(source, target)
            elif source.is_file():
                shutil.copy2(source, target)
            else:
                continue
        except (FileNotFoundError, NotADirectoryError, FileExistsError):
            continue  # the tree changed while it was copied (a file where a folder was, or gone)
        copied += 1
    return copied


def _make_removable(function: Any, path: str, _exc: Any) -> None:
    """rmtree's error hook: a child may leave read-only directories behind."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        os.chmod(path, stat.S_IRWXU)
        function(path)


def remove_tree(path: Path) -> None:
    """Delete a scratch directory whatever permissions the child left on it."""
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_make_removable)
    else:
        shutil.rmtree(path, onerror=_make_removable)


@dataclass(frozen=True)
class Scratch:
    """A scratch copy of `workspace` at `root` (both resolved), and a private `cache` folder."""

    workspace: Path
    root: Path
    cache: Path

    def map(self, path: Path | str | None) -> Path | None:
        """Where a child should read `path`: its copy when the copy holds it, otherwise the
        original (outside the workspace, or not copied: a read-only use, e.g. a Ray probe's
        last-passing kernel under `.git/kernelscope/`)."""
        if path is None:
            return None
        original = Path(path).expanduser().resolve()
        if not _inside(original, self.workspace):
            return original
        copy = self.root / original.relative_to(self.workspace)
        return copy if copy.exists() else original

    def stand_in(self, candidate: Path | None, measured: str = KERNEL_FILE) -> None:
        """A gate command measures the workspace's `measured` file (atrex's test_kernel.py
        reads kernel.py whatever it is asked): a candidate that is another file takes that
        file's place in this copy, so the gate judges the candidate (`bench --candidate`, a
        fan-out's candidates), never the workspace's kernel.py in its stead."""
        if candidate is None:
            return
        source = Path(candidate).expanduser().resolve()
        if source != self.workspace / measured and source.is_file():
            (self.root / measured).write_bytes(source.read_bytes())

    def map_argument(self, argument: str) -> str:
        """A command-line word naming a path inside the workspace, pointed into the copy."""
        prefix = str(self.workspace)
        if argument == prefix or argument.startswith(prefix + os.sep):
            return str(self.root) + argument[len(prefix) :]
        return argument

    def restore_text(self, text: str) -> str:
        """Paths of the copy in a message or traceback, shown as the workspace's own."""
        return text.replace(str(self.root), str(self.workspace))

    def restore(self, value: Any) -> Any:
        """`restore_text` through a JSON-like value (a dumped result)."""
        if isinstance(value, str):
            return self.restore_text(value)
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        return value

    def env(
        self, extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The child's environment: ours plus `extra`, no bytecode files, PWD the copy, and
        any cache directory that would land in the workspace moved into the scratch folder."""
        env = dict(os.environ if base is None else base)
        env.update(extra or {})
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PWD"] = str(self.root)
        for name in CACHE_VARIABLES:
            value = env.get(name)
            if value and os.path.isabs(value) and _inside(Path(value).resolve(), self.workspace):
                env[name] = str(self.cache / name.lower())
        # Triton's default cache is $TRITON_HOME or $HOME, then .triton/cache: fine unless that
        # home is the workspace or inside it, or a folder this process may not write (an agent's
        # sandbox keeps the home read-only, Codex's workspace-write does), where Triton's first
        # compile dies on the read-only file system.
        home = env.get("TRITON_HOME") or env.get("HOME")
        if (
            "TRITON_CACHE_DIR" not in env
            and home
            and (
                _inside(Path(home).resolve(), self.workspace)
                or not _writable(Path(home) / ".triton" / "cache")
            )
        ):
            env["TRITON_CACHE_DIR"] = str(self.cache / "triton")
        return env


@contextlib.contextmanager
def scratch_copy(
    workspace: Path, prefix: str = "kernelscope-scratch-", ignored: tuple[str, ...] = ()
) -> Iterator[Scratch]:
    """A fresh copy of `workspace` in a temporary directory outside it, deleted on exit;
    `ignored`: paths copied even when git ignores them (a kind's evaluator runtime).

    The copy keeps the workspace's folder name (`<tmp>/<name>/`): some gates and agents read
    it (`kernel_opt_<name>`)."""
    workspace = workspace.expanduser().resolve()
    parent = _scratch_parent(workspace, prefix)
    try:
        root = parent / (workspace.name or "workspace")
        copy_workspace(workspace, root, ignored)
        # a name of its own beside the copy: a workspace folder called `cache` is the copy's
        cache = Path(tempfile.mkdtemp(prefix="cache-", dir=parent))
        yield Scratch(workspace=workspace, root=root, cache=cache)
    finally:
        with contextlib.suppress(OSError):
            remove_tree(parent)


def _scratch_parent(workspace: Path, prefix: str) -> Path:
    """A new folder in the temporary folder ($TMPDIR, else /tmp), or in /tmp where that is the
    workspace or inside it. None that can be made (an agent's sandbox keeps /tmp read-only, or
    Python found no writable temporary folder but the workspace) stops the run with a clear
    error naming the folder, before anything ran."""
    try:
        parent = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
        if _inside(parent, workspace):  # TMPDIR inside the workspace would defeat the point
            shutil.rmtree(parent, ignore_errors=True)
            fallback = "/tmp" if os.path.isdir("/tmp") else None
            parent = Path(tempfile.mkdtemp(prefix=prefix, dir=fallback)).resolve()
    except OSError as exc:
        where = f"{Path(exc.filename).parent}: {write_error_reason(exc)}" if exc.filename else str(exc)
        raise WriteFailed(
            f"could not make the scratch folder to run the workspace's copy in ({where}); nothing "
            "was run. kernelscope runs every kernel and gate in a copy of the workspace in the "
            "temporary folder ($TMPDIR, else /tmp), never in the workspace: make one writable "
            "(an agent's sandbox: allow /tmp, or set TMPDIR to a folder it may write)"
        ) from exc
    return parent
