"""The few git operations the workflows need, through the git command line.

Workspaces are git repositories (every accepted iteration is a commit). kernelscope commits
only the files it names, never `git add -A`, and keeps failed kernels on side refs
(`refs/kernelscope/failed/v<N>`) with plumbing commands, so a person's index, branch and
working tree are left as they were.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.memory.atomic_io import workspace_lock
from kernelscope.daemon.engine.memory.git_place import (
    READ_ONLY_ENV,
    READ_ONLY_OPTIONS,
    find_repository,
    git_environment,
)
from kernelscope.daemon.engine.run.child_limits import stat_fields
from kernelscope.protocol import workspace_files

_IDENTITY = {
    "GIT_AUTHOR_NAME": "kernelscope",
    "GIT_AUTHOR_EMAIL": "kernelscope@localhost",
    "GIT_COMMITTER_NAME": "kernelscope",
    "GIT_COMMITTER_EMAIL": "kernelscope@localhost",
}


_READ_ONLY = frozenset({"rev-parse", "show", "diff", "log", "cat-file", "ls-files", "status", "check-ignore"})
# (how a read runs, and the environment of every git command: memory/git_place.py)
GIT_TIMEOUT_S = 120
# kernelscope's commits of one repository take turns (Git.committing); a commit's hooks may run
# a test suite, so a writer waits long before it gives up.
COMMIT_LOCK_NAME = ".kernelscope-commit.lock"
COMMIT_LOCK_TIMEOUT_S = 600.0


def _alive(pid: int) -> bool:
    """Whether `pid` runs. A zombie does not: a killed git whose parent died stays a zombie
    for as long as nobody reaps it (in a container, PID 1 often never does)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = stat_fields(pid)
    return fields is None or fields[0] != "Z"  # no /proc: trust kill(0)


def is_revision(commit: str) -> bool:
    """Whether a revision named by a record (`git_commit_hash`, written by whoever wrote the
    record) may be put on a git command line: one that starts with '-' would be read as an
    option (`--output=FILE` writes a file), and no revision holds whitespace or a NUL."""
    return bool(commit) and not commit.startswith("-") and not any(c.isspace() or c == "\0" for c in commit)


class Git:
    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self._git_dir: Path | None = None
        self._toplevel: Path | None = None
        self._identity: dict[str, str] | None = None

    def run(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True, cwd: Path | None = None
    ) -> str:
        environment = git_environment()
        read_only = args[0] in _READ_ONLY
        if not read_only:
            for key, value in self._fallback_identity().items():
                environment.setdefault(key, value)
        environment.update(env or {})
        options: tuple[str, ...] = ()
        if read_only:
            environment.update(READ_ONLY_ENV)
            options = READ_ONLY_OPTIONS
        marker = None if read_only else self._begin_write()
        started = time.time()  # before git can create any lock
        try:
            try:
                process = subprocess.Popen(
                    ["git", *options, *args],
                    cwd=cwd or self.workdir,
                    stdin=subprocess.DEVNULL,  # never the daemon's own stdin (the editor's)
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=environment,
                )
            except OSError as exc:
                raise self._not_started(exc) from None
            if marker is not None:
                # The start time goes in the file: its mtime is that of this write, which a
                # loaded machine may delay past the moment git created its lock.
                marker.write_text(f"{process.pid} {started}")
            try:
                stdout, stderr = process.communicate(timeout=GIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
                stderr = f"no answer in {GIT_TIMEOUT_S} s, stopped; {stderr}"
        finally:
            if marker is not None:
                marker.unlink(missing_ok=True)
        if check and process.returncode != 0:
            if process.returncode < 0 and "stopped;" not in stderr:  # it said nothing: say why
                stderr = f"killed by signal {-process.returncode}; {stderr}"
            raise DataError(
                f"git {' '.join(args[:3])} failed in {self.workdir}: {stderr.strip().rstrip(';')}"
            )
        return stdout.strip()

    def _not_started(self, exc: OSError) -> DataError:
        # (the reason is the program's, not the workspace's: "No such file or directory" means
        # no git on PATH)
        where = "no git program on PATH" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        return DataError(f"could not start git for {self.workdir}: {where}")

    def _fallback_identity(self) -> dict[str, str]:
        """Commits made for the user need an identity even where none is configured; where
        one is (user.name, user.email in any git config), it is the user's commits and theirs
        stands (the GIT_* variables would override it)."""
        if self._identity is None:
            missing = {}
            for part in ("name", "email"):
                found = self._plain("config", "--get", f"user.{part}")
                if found.returncode != 0 or not found.stdout.strip():
                    for role in ("AUTHOR", "COMMITTER"):
                        name = f"GIT_{role}_{part.upper()}"
                        missing[name] = _IDENTITY[name]
            self._identity = missing
        return self._identity

    # -- recovery from a kernelscope process killed in the middle of a git command ------------

    def git_dir(self) -> Path | None:
        """The work tree's git directory (memory/git_place.py: the one rule, no process), or
        None outside git."""
        if self._git_dir is None:
            repository = find_repository(self.workdir)
            self._git_dir = repository.git_dir if repository else None
        return self._git_dir

    def _begin_write(self) -> Path | None:
        """Clear what a killed kernelscope git command left, then leave a marker naming this
        process (and, once started, its git child) for as long as the command runs.

        git removes its `*.lock` files on a normal exit or a catchable signal, but not on
        SIGKILL; the next `git commit` then fails with "index.lock: File exists" for ever.
        A lock is only ours to delete when a marker says a kernelscope git command was
        running when it was created and neither that process nor its git child is alive."""
        git_dir = self.git_dir()
        if git_dir is None:
            return None
        markers = git_dir / "kernelscope" / "git-ops"
        try:
            markers.mkdir(parents=True, exist_ok=True)
            self.recover_stale_locks()
            marker = markers / str(os.getpid())
            marker.write_text("")
        except OSError:
            return None
        return marker

    def recover_stale_locks(self) -> list[Path]:
        """Delete git lock files created during a kernelscope git command whose process (and
        git child) are dead; returns what was removed."""
        git_dir = self.git_dir()
        removed: list[Path] = []
        if git_dir is None or not (git_dir / "kernelscope" / "git-ops").is_dir():
            return removed
        for marker in (git_dir / "kernelscope" / "git-ops").iterdir():
            try:
                owner = int(marker.name)
                content = marker.read_text().split()  # "" until git runs, then "CHILD STARTED"
                child = int(content[0]) if content else 0
                since = (float(content[1]) if len(content) > 1 else marker.stat().st_mtime) - 1.0
            except (OSError, ValueError):
                continue
            if owner == os.getpid() or _alive(owner) or _alive(child):
                continue
            candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock"]
            candidates += list((git_dir / "refs").rglob("*.lock"))
            for lock in candidates:
                try:
                    if lock.stat().st_mtime >= since:
                        lock.unlink()
                        removed.append(lock)
                except OSError:
                    continue
            marker.unlink(missing_ok=True)
        return removed

    def is_repository(self) -> bool:
        """Whether the workspace is in git (memory/git_place.py's rule, as the locks ask it)."""
        return self.git_dir() is not None

    def require(self) -> None:
        """That git works in the workspace's repository, asked of git once before a write (a
        different question from is_repository: memory/git_place.py). DataError with git's
        reason where not: no git program, a repository owned by another user that git refuses
        (safe.directory), or git finding another repository than the one the locks are in."""
        found = Path(self.run("rev-parse", "--absolute-git-dir"))
        own = self.git_dir()
        if own is None or found.resolve() != own.resolve():
            raise DataError(
                f"git finds the repository {found} from {self.workdir}, kernelscope "
                + (f"{own}" if own else "none")
                + " (a .git it reads the way git does, from the workspace's folder upwards); "
                "nothing was changed"
            )

    def init(self) -> None:
        self.run("init", "-q")

    def head(self) -> str | None:
        value = self.run("rev-parse", "--verify", "-q", "HEAD", check=False)
        return value or None

    def relative(self, path: Path) -> str:
        """`path` as git names it: from the repository's top."""
        return str(Path(path).resolve().relative_to(self.toplevel().resolve()))

    def ignored(self, paths: list[Path]) -> set[Path]:
        """Those of `paths` that git ignores (.gitignore and the like) and does not track:
        a commit cannot name them, and no checkout or stash touches them."""
        if not paths:
            return set()
        names = {self.relative(p): p for p in paths}
        found = self.run("check-ignore", "--", *names, check=False, cwd=self.toplevel())
        return {names[name] for name in found.splitlines() if name in names}

    def commit_paths(self, paths: list[Path], message: str) -> str:
        """Commit exactly these paths (files, or folders: all of their changes) as the working
        tree holds them and return the hash; whatever else is staged stays staged, and the
        index's entries of these paths then hold what was committed (`git commit --only`). A
        commit that fails (a hook refused it) leaves the index as it was."""
        with self.committing():
            return self._commit_paths(paths, message)

    def _commit_paths(self, paths: list[Path], message: str) -> str:
        specs = [":(top)" + self.relative(p) for p in paths]  # from any folder of the repository
        untracked = self.run("ls-files", "--others", "--exclude-standard", "--full-name", "--", *specs)
        new = [":(top)" + name for name in untracked.splitlines()]
        if new:
            self.run("add", "--intent-to-add", "--", *new)  # commit --only needs them known
        try:
            self.run("commit", "-q", "--only", "-m", message, "--", *specs)
        except DataError:
            if new:
                self.run("reset", "-q", "--", *new, check=False)
            raise
        head = self.head()
        assert head is not None
        return head

    def commit_files(self, files: list[Path], message: str, contents: dict[Path, bytes]) -> str:
        """Commit these files, with the bytes in `contents` for those it holds and the working
        tree's for the others (the text an iteration measured, however kernel.py was edited
        since), leaving the working tree alone (a newer edit shows as a change since HEAD).
        Made from a temporary index in the real work tree: hooks run where they expect, seeing
        that index as `git commit --only` shows them its own. The index's entries of these
        files then hold what was committed. A commit that fails leaves the index as it was."""
        with self.committing():
            return self._commit_files(files, message, contents)

    def _commit_files(self, files: list[Path], message: str, contents: dict[Path, bytes]) -> str:
        entries = [self._index_entry(path, contents.get(path)) for path in files]
        with self._index_of_head_with(entries) as env:
            self.run("commit", "-q", "-m", message, env=env, cwd=self.toplevel())
        # The index's entries of these files: what HEAD now holds. Best effort: the commit is
        # made, and an index another git command holds locked only shows them as changed.
        for entry in entries:
            self.run("update-index", "--add", "--cacheinfo", entry, cwd=self.toplevel(), check=False)
        committed = self.head()
        assert committed is not None
        return committed

    def _index_entry(self, path: Path, content: bytes | None) -> str:
        """`update-index --cacheinfo`'s entry for `path` holding `content` (None: the working
        tree's), its object written."""
        blob = self._hash_bytes(workspace_files.read_bytes(Path(path)) if content is None else content)
        mode = "100755" if os.access(path, os.X_OK) else "100644"
        return f"{mode},{blob},{self.relative(path)}"

    @contextlib.contextmanager
    def _index_of_head_with(self, entries: list[str]) -> Iterator[dict[str, str]]:
        """A temporary index holding HEAD's tree with these entries over it: the environment
        that points git at it (the user's index is not touched)."""
        with tempfile.TemporaryDirectory(prefix="kernelscope-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            head = self.head()
            if head:
                self.run("read-tree", head, env=env, cwd=self.toplevel())
            for entry in entries:
                self.run("update-index", "--add", "--cacheinfo", entry, env=env, cwd=self.toplevel())
            yield env

    @contextlib.contextmanager
    def committing(self) -> Iterator[None]:
        """Hold the repository's commit lock (in its git directory, a worktree's own: one HEAD
        and one index each) while kernelscope writes its index or moves its HEAD. A commit
        reads HEAD first and moves it last: two at once (an agent's iterate and a restart's
        mask, or iterations of two workspaces of one repository) failed with "cannot lock ref
        'HEAD'" or "index.lock: File exists", or, when HEAD moved between the temporary
        index's read-tree and the commit, made a commit whose tree undid the other's. Taken
        last, after the iteration and memory locks, and never twice (flock does not re-enter):
        no kernelscope lock is taken while it is held."""
        git_dir = self.git_dir()
        if git_dir is None:
            yield
            return
        with workspace_lock(git_dir / "kernelscope", COMMIT_LOCK_TIMEOUT_S, COMMIT_LOCK_NAME):
            yield

    def toplevel(self) -> Path:
        """The repository's top folder (every path given to git is named from it)."""
        if self._toplevel is None:
            repository = find_repository(self.workdir)
            if repository is None:
                raise DataError(f"{self.workdir} is not in a git repository")
            self._toplevel = repository.toplevel
        return self._toplevel

    def show_file(self, commit: str, path: Path) -> str | None:
        """A file's content at a commit, or None when it did not exist there (or `commit`
        names no revision)."""
        if not is_revision(commit):
            return None
        try:
            value = self._plain("show", f"{commit}:{self.relative(path)}", timeout=60)
        except DataError:  # no git program: no content to show
            return None
        return value.stdout.decode() if value.returncode == 0 else None

    def diff_file(self, commit: str | None, path: Path, to: str | None = None) -> str:
        """The change to `path` since `commit`: in the working tree, or at commit `to` (empty
        when unchanged)."""
        if commit is None or not is_revision(commit) or (to is not None and not is_revision(to)):
            return ""
        return self.run(
            "diff", commit, *([to] if to else []), "--", ":(top)" + self.relative(path), check=False
        )

    def store_on_side_ref(self, path: Path, ref: str, message: str, content: bytes) -> str:
        """Commit `content` as `path` on `ref` (parent: HEAD) without touching HEAD, the index
        or the working tree; returns the commit hash. Under the commit lock, as every other
        kernelscope git write: the tree is read from HEAD and the parent is HEAD, and another
        commit moving HEAD between the two (a restart's mask) made a side commit that undid
        that commit's files beside its parent."""
        with self.committing():
            with self._index_of_head_with([self._index_entry(path, content)]) as env:
                tree = self.run("write-tree", env=env)
            head = self.head()
            parents = ["-p", head] if head else []
            commit = self.run("commit-tree", tree, *parents, "-m", message)
            self.run("update-ref", ref, commit)
            return commit

    def _plain(
        self, *args: str, stdin: bytes | None = None, timeout: float = GIT_TIMEOUT_S
    ) -> subprocess.CompletedProcess[bytes]:
        """A git command outside `run`'s bookkeeping (no write marker, no identity: a config
        read, a file at a commit, a blob written from bytes), in the environment of every git
        command."""
        try:
            return subprocess.run(
                ["git", *args],
                cwd=self.workdir,
                input=b"" if stdin is None else stdin,  # never the daemon's stdin
                capture_output=True,
                timeout=timeout,
                env=git_environment(),
            )
        except OSError as exc:
            raise self._not_started(exc) from None

    def _hash_bytes(self, content: bytes) -> str:
        done = self._plain("hash-object", "-w", "--stdin", stdin=content)
        if done.returncode != 0:
            raise DataError(
                f"git hash-object failed in {self.workdir}: {done.stderr.decode(errors='replace').strip()}"
            )
        return done.stdout.decode().strip()

    def delete_ref(self, ref: str) -> None:
        self.run("update-ref", "-d", ref, check=False)

    def restore_file(self, commit: str, path: Path) -> None:
        if not is_revision(commit):
            raise DataError(f"{commit!r} is not a git revision: {path.name} was left as it is")
        with self.committing():  # (it writes the index, which a commit --only holds locked)
            self.run("checkout", commit, "--", ":(top)" + self.relative(path))
