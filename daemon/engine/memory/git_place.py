"""Where a workspace's git is: the one rule every part of kernelscope asks, and the
environment every git command kernelscope runs gets.

The rule is git's own search, read from the files git keeps (no process, so the editor's
per-request paths may ask it): from the workspace's real folder upwards, the first `.git`
that git would take, a folder holding HEAD, or a file `gitdir: <path>` (a linked worktree,
such as an atrex episode's, or a submodule) naming one. A `.git` file naming no such folder
stops the search, as it stops git ("not a git repository"). The locks live in the git
directory found (atomic_io.lock_dir_of), kernelscope's commits, history and probes use the
same repository, and "is this workspace in git" means that one was found.

The search stops where git's stops: at a folder named in GIT_CEILING_DIRECTORIES (the
workspace itself is still looked at, as git does) and at a filesystem boundary unless
GIT_DISCOVERY_ACROSS_FILESYSTEM is true, so a workspace on its own mount inside a checkout is
outside git for both.

So that git finds the same repository, kernelscope's git commands run without the variables
that name another one (GIT_DIR in a hook's environment or a user's shell, GIT_WORK_TREE,
GIT_INDEX_FILE, ...: from git's own list, `git rev-parse --local-env-vars`); the user's
identity and configuration stay, those passed in the environment too (GIT_CONFIG_COUNT /
GIT_CONFIG_KEY_n, GIT_CONFIG_PARAMETERS: how CI and containers set user.name or
safe.directory, which git's list also names).

A different question, asked only by what is about to write with git: whether git will work in
that repository at all (a git program on PATH; a repository owned by another user is refused
by git unless `safe.directory` allows it). workflows/git.py Git.require asks git once and says
why not, before anything is changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelscope.protocol import workspace_files

FAILED_REF_PREFIX = "refs/kernelscope/failed/"  # where a failed version's kernel is kept

# How kernelscope runs a git command that reads: `git status` (GIT_OPTIONAL_LOCKS) and `git diff`
# (diff.autoRefreshIndex; git 2.39 ignores GIT_OPTIONAL_LOCKS there) otherwise refresh
# .git/index under index.lock: a write to a workspace kernelscope only observes, and a lock a
# SIGKILL would leave behind with no marker to clear it.
READ_ONLY_ENV = {"GIT_OPTIONAL_LOCKS": "0"}
READ_ONLY_OPTIONS = ("-c", "diff.autoRefreshIndex=false")

# `git rev-parse --local-env-vars` (git 2.39) but its configuration variables (GIT_CONFIG,
# GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT: settings, not a place): the variables that name a
# repository or parts of one instead of the one found from the working folder.
REPOSITORY_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
    }
)


def git_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a git command kernelscope runs: this process's, without the variables
    that would point git at another repository than the workspace's, with `extra` over it."""
    environment = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}
    environment.update(extra or {})
    return environment


class Repository:
    """Where git keeps a workspace's state, and the workspace's place in the repository. (A
    plain class: `dataclasses` is 5 ms of the CLI fast path's start-up, which takes the
    workspace's lock here; see memory/atrex_fields.py.)"""

    __slots__ = ("common_dir", "git_dir", "prefix", "toplevel")

    def __init__(self, toplevel: Path, git_dir: Path, common_dir: Path, prefix: str) -> None:
        self.toplevel = toplevel  # the folder holding `.git` (real path)
        self.git_dir = git_dir  # per work tree: HEAD and the index live here
        self.common_dir = common_dir  # shared by linked work trees: refs, packed-refs, objects
        self.prefix = prefix  # the workspace's folder from the top, with a final "/" ("" at the top)

    def rel(self, name: str) -> str:
        return f"{self.prefix}{name}"


def _is_git_dir(folder: Path) -> bool:
    return (folder / "HEAD").is_file()


def _git_dir_at(folder: Path) -> Path | bool | None:
    """The git directory named by `folder`'s `.git`; None where it has none; False where its
    `.git` is a file naming no git directory (git stops there)."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return dot_git if _is_git_dir(dot_git) else None  # (git passes over a folder that is none)
    try:
        first = workspace_files.read_text(dot_git, errors="replace").splitlines()[:1]
    except OSError:
        return None
    if not first or not first[0].startswith("gitdir:"):
        return False
    named = Path(first[0][len("gitdir:") :].strip())
    git_dir = Path(os.path.realpath(named if named.is_absolute() else folder / named))
    return git_dir if _is_git_dir(git_dir) else False


def _ceilings() -> set[Path]:
    """GIT_CEILING_DIRECTORIES' folders (git: a colon-separated list of absolute paths; an
    empty entry ends the part that git resolves, kept here as written)."""
    value = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    return {Path(os.path.realpath(part)) for part in value.split(os.pathsep) if part and os.path.isabs(part)}


def _across_filesystems() -> bool:
    return os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", "").strip().lower() in ("1", "true", "yes", "on")


def _device(folder: Path) -> int | None:
    try:
        return folder.stat().st_dev
    except OSError:
        return None


def find_repository(workspace: Path) -> Repository | None:
    """The repository holding `workspace` by the rule above, or None outside git."""
    folder = Path(os.path.realpath(workspace))  # every process names one workspace's git alike
    ceilings, across = _ceilings(), _across_filesystems()
    device = None  # the filesystem of the nearest folder that exists (a workspace not made yet)
    for top in (folder, *folder.parents):
        here = _device(top)
        if top != folder and (
            top in ceilings or (not across and here is not None and device is not None and here != device)
        ):
            return None
        device = device if device is not None else here
        found = _git_dir_at(top)
        if found is False:
            return None
        if isinstance(found, Path):
            try:
                common = workspace_files.read_text(found / "commondir").strip()
            except OSError:
                common = ""
            below = folder.relative_to(top)
            return Repository(
                toplevel=top,
                git_dir=found,
                common_dir=Path(os.path.realpath(found / common)) if common else found,
                prefix=f"{below}/" if below.parts else "",
            )
    return None
