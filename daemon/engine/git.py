"""The few git operations the workflows need, through the git command line.

Workspaces are git repositories (every accepted iteration is a commit). kernelscope commits
only the files it names, never `git add -A`, and keeps failed kernels on side refs
(`refs/kernelscope/failed/v<N>`) with plumbing commands, so a person's index, branch and
working tree are left as they were.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from kernelscope.daemon.engine.errors import DataError

FAILED_REF_PREFIX = "refs/kernelscope/failed/"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "kernelscope",
    "GIT_AUTHOR_EMAIL": "kernelscope@localhost",
    "GIT_COMMITTER_NAME": "kernelscope",
    "GIT_COMMITTER_EMAIL": "kernelscope@localhost",
}


class Git:
    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)

    def run(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        environment = dict(os.environ)
        # Commits made for the user need an identity even where none is configured.
        for key, value in _IDENTITY.items():
            environment.setdefault(key, value)
        environment.update(env or {})
        process = subprocess.run(
            ["git", *args], cwd=self.workdir, capture_output=True, text=True, env=environment, timeout=120
        )
        if check and process.returncode != 0:
            raise DataError(f"git {' '.join(args[:3])} failed in {self.workdir}: {process.stderr.strip()}")
        return process.stdout.strip()

    def is_repository(self) -> bool:
        return self.run("rev-parse", "--is-inside-work-tree", check=False) == "true"

    def init(self) -> None:
        self.run("init", "-q")

    def head(self) -> str | None:
        value = self.run("rev-parse", "--verify", "-q", "HEAD", check=False)
        return value or None

    def relative(self, path: Path) -> str:
        top = Path(self.run("rev-parse", "--show-toplevel"))
        return str(Path(path).resolve().relative_to(top.resolve()))

    def commit_paths(self, paths: list[Path], message: str) -> str:
        """Commit exactly these paths (whatever else is staged stays staged) and return the hash."""
        names = [self.relative(p) for p in paths]
        self.run("add", "--", *names)
        self.run("commit", "-q", "--only", "-m", message, "--", *names)
        head = self.head()
        assert head is not None
        return head

    def show_file(self, commit: str, path: Path) -> str | None:
        """A file's content at a commit, or None when it did not exist there."""
        value = subprocess.run(
            ["git", "show", f"{commit}:{self.relative(path)}"],
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return value.stdout if value.returncode == 0 else None

    def diff_file(self, commit: str | None, path: Path) -> str:
        """The working tree's change to `path` since `commit` (empty when unchanged)."""
        if commit is None:
            return ""
        return self.run("diff", commit, "--", self.relative(path), check=False)

    def store_on_side_ref(self, path: Path, ref: str, message: str) -> str:
        """Commit the working-tree content of `path` on `ref` (parent: HEAD) without touching
        HEAD, the index or the working tree; returns the commit hash."""
        blob = self.run("hash-object", "-w", "--", str(path))
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            head = self.head()
            if head:
                self.run("read-tree", head, env=env)
            self.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{self.relative(path)}", env=env)
            tree = self.run("write-tree", env=env)
        parents = ["-p", head] if head else []
        commit = self.run("commit-tree", tree, *parents, "-m", message)
        self.run("update-ref", ref, commit)
        return commit

    def restore_file(self, commit: str, path: Path) -> None:
        self.run("checkout", commit, "--", self.relative(path))
