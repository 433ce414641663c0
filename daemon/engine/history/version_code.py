"""Where a memory version's kernel.py is: one rule, read by the history (a version's commit
and its kernel for blame, tried values, compare) and by `kernelscope iterate` (v0's kernel,
the one a score vs v0 is timed against).

A version's commit is, in this order:
- the commit its record names (`git_commit_hash`), when git knows it;
- else the newest commit on HEAD's history that touches the workspace's folder and whose
  subject names the version (`V3: ...`, as agents following the seed workflow commit);
- else, for v0 only, the commit that added its record, when that commit added no other
  version's record and holds kernel.py among its changes: a workspace created at v0 (the seeds'
  optimizer writes the baseline kernel.py and v0.json and commits them). A workspace worked on
  before its first commit adds v0.json, v1.json... with the current kernel.py in one commit,
  and that kernel.py is not v0's; nor is a kernel.py committed apart from the record.
No commit found: the version's code is nowhere, and nothing is taken in its place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kernelscope.daemon.engine.history import gitdata
from kernelscope.daemon.engine.memory.core import BASELINE, FILE_RE
from kernelscope.daemon.engine.memory.records import MemoryEntry
from kernelscope.daemon.engine.workspace.workspace import KERNEL_NAME

VERSION_SUBJECT = re.compile(r"^[Vv](\d+):")


def subject_version(subject: str) -> str | None:
    """`V3: ...`, `v2: kernel candidate` -> the version the subject names."""
    match = VERSION_SUBJECT.match(subject)
    return f"v{int(match.group(1))}" if match else None


def cited_commit(entry: MemoryEntry) -> str | None:
    """The commit a version's record names (not yet checked against git)."""
    commit = entry.record.git_commit_hash if entry.record is not None else None
    return commit.strip() if isinstance(commit, str) and commit.strip() else None


def commit_object(commit: str) -> str:
    """The object name that resolves a cited commit to its full hash (`batch_check`)."""
    return f"{commit}^{{commit}}"


@dataclass(frozen=True)
class VersionCommit:
    commit: str
    cited: bool  # named by the record (else found by a subject or as v0's first commit)


def version_commits(
    root: Path,
    entries: list[MemoryEntry],
    head: str | None,
    resolved: dict[str, str | None] | None = None,
) -> dict[str, VersionCommit]:
    """version -> its commit, by the rule above, for the versions that have one. `resolved`:
    the caller's `batch_check` answers already holding the cited commits' `commit_object`
    names (the history asks them in its own batch); the others are asked here."""
    paths = gitdata.repo_paths(root)
    if paths is None or head is None:
        return {}
    cited = {e.version: c for e in entries if (c := cited_commit(e))}
    objects = dict(resolved or {})
    missing = [commit_object(c) for c in cited.values() if commit_object(c) not in objects]
    objects.update(gitdata.batch_check(root, missing))
    found: dict[str, VersionCommit] = {}
    for version, commit in cited.items():
        full = objects.get(commit_object(commit))
        if full:
            found[version] = VersionCommit(full, cited=True)
    unresolved = [e for e in entries if e.version not in found]
    if not unresolved:
        return found
    wanted = {e.version for e in unresolved}
    # only commits touching this workspace's folder: in a repository holding several
    # workspaces, another one's `V2:` commit is not this one's v2
    for entry in gitdata.log_commits(paths.toplevel, [head], paths.prefix or None):
        named = subject_version(entry.subject)
        if named is not None and named in wanted and named not in found:
            found[named] = VersionCommit(entry.commit, cited=False)  # newest first
    baseline = next((e for e in unresolved if e.version == BASELINE and e.version not in found), None)
    if baseline is not None:
        added = _baseline_commit(paths, head, baseline.path)
        if added is not None:
            found[BASELINE] = VersionCommit(added, cited=False)
    return found


def version_commit(root: Path, entry: MemoryEntry) -> str | None:
    """One version's commit by the rule above (None: its code is nowhere to be found)."""
    paths = gitdata.repo_paths(root)
    if paths is None:
        return None
    try:
        found = version_commits(root, [entry], gitdata.resolve_head(paths))
    except gitdata.GitUnavailable:
        return None
    value = found.get(entry.version)
    return value.commit if value else None


def _baseline_commit(paths: gitdata.Repository, head: str, record: Path) -> str | None:
    """The newest commit on HEAD's history that added v0's record, when it added no other
    version's record and added or changed kernel.py (module docstring)."""
    memory = paths.rel(f"{record.parent.name}/")
    kernel = paths.rel(KERNEL_NAME)
    top = paths.toplevel
    out = gitdata.run_git(
        top, "log", "-1", "--diff-filter=A", "--format=%H", head, "--", memory + record.name, check=False
    )
    commit = out.decode("utf-8", "replace").strip()
    if not commit:
        return None
    changes = gitdata.run_git(
        top,
        "diff-tree",
        "-r",
        "-z",
        "--root",
        "--no-commit-id",
        "--name-status",
        commit,
        "--",
        memory,
        kernel,
        check=False,
    )
    fields = changes.decode("utf-8", "replace").split("\0")
    added_records, kernel_changed = [], False
    for status, name in zip(fields[0::2], fields[1::2], strict=False):
        if name == kernel:
            kernel_changed = True
        elif status == "A" and name.startswith(memory) and FILE_RE.match(name[len(memory) :]):
            added_records.append(name)
    return commit if kernel_changed and added_records == [memory + record.name] else None
